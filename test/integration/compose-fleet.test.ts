import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { commandOf, envOf, readCompose, type ComposeService } from '../helpers/container-files';
import { requireEnv, uniq, waitFor } from '../helpers/env';
import { freePort, stopProc, type Proc } from '../helpers/procs';
import { redisUrlOf, useRedisDb } from '../helpers/redis-db';

// The services of docker-compose.yml started as processes, with their own commands and
// environment; only what names the Docker network changes: the shared Kafka and Redis, free
// loopback ports, topics and a consumer group of this run, and the receiver's address in
// the SSRF allow-list. One webhook enqueued on howk-api must arrive at the echo receiver.

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const compose = readCompose();
const db = useRedisDb();
const procs: Proc[] = [];
const id = uniq('compose');
const TOPICS = ['pending', 'slow', 'results', 'deadletter', 'state', 'scripts', 'keys', 'config_secrets', 'guards', 'applications', 'messages'];
const PORT_VARS = ['HOWK_API_PORT', 'HOWK_BRIDGE_PORT', 'HOWK_METRICS_PORT', 'ECHO_PORT'];
const HOST_VARS = ['HOWK_API_HOST', 'HOWK_BRIDGE_HOST', 'HOWK_METRICS_HOST'];

const start = (name: string, s: ComposeService, env: Record<string, string>): Proc => {
  const [cmd, ...args] = commandOf(s)!;
  expect(cmd).toBe('node');
  const child = spawn(process.execPath, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const keep = (b: Buffer) => void (out = (out + b.toString()).slice(-100_000));
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const proc = { role: name, child, output: () => out, exited: new Promise<number | null>((r) => child.on('exit', r)) };
  procs.push(proc);
  return proc;
};

/** The service's environment with the Docker network's names replaced by this machine's. */
const localEnv = async (s: ComposeService): Promise<Record<string, string>> => {
  const env = envOf(s);
  for (const v of PORT_VARS) if (env[v]) env[v] = String(await freePort());
  for (const v of HOST_VARS) if (env[v]) env[v] = '127.0.0.1';
  if (env.HOWK_KAFKA_BROKERS) {
    env.HOWK_KAFKA_BROKERS = requireEnv('KAFKA_BROKERS');
    env.HOWK_REDIS_URL = redisUrlOf(db());
    env.HOWK_KAFKA_CONSUMER_GROUP = `${id}-workers`;
    for (const t of TOPICS) env[`HOWK_KAFKA_TOPICS_${t.toUpperCase()}`] = `${id}.${t}`;
    env.HOWK_DELIVERY_ALLOWED_NETWORKS = '127.0.0.1/32';
  }
  return env;
};

const ok = async (url: string) => (await fetch(url).catch(() => undefined))?.ok ?? false;
const roleOf = (s: ComposeService) =>
  /howk-(\w+)\.mjs$|container\/(echo)\.mjs$/
    .exec(commandOf(s)?.[1] ?? '')
    ?.slice(1)
    .find(Boolean);

describe('docker-compose.yml services, run as processes', () => {
  const probes: string[] = [];
  let api = '';
  let echo: Proc | undefined;
  let echoUrl = '';

  beforeAll(async () => {
    const services = Object.entries(compose.services).filter(([, s]) => roleOf(s));
    const byRole = (r: string) => services.filter(([, s]) => roleOf(s) === r);
    // In the order depends_on gives: the receiver and howk-api, then the rest.
    for (const [name, s] of [...byRole('echo'), ...byRole('api')]) {
      const env = await localEnv(s);
      const p = start(name, s, env);
      if (env.ECHO_PORT) {
        echo = p;
        echoUrl = `http://127.0.0.1:${env.ECHO_PORT}/hook`;
        probes.push(`http://127.0.0.1:${env.ECHO_PORT}/health`);
      } else api = `http://127.0.0.1:${env.HOWK_API_PORT}`;
    }
    await waitFor(() => ok(`${api}/ready`), { timeoutMs: 90_000, intervalMs: 250, what: 'howk-api /ready' });
    for (const [name, s] of services.filter(([, s]) => !['echo', 'api'].includes(roleOf(s)!))) {
      for (let i = 0; i < (s.deploy?.replicas ?? 1); i++) {
        const env = await localEnv(s);
        start(`${name}-${i + 1}`, s, env);
        const port = env.HOWK_METRICS_PORT ?? env.HOWK_BRIDGE_PORT;
        probes.push(`http://127.0.0.1:${port}/ready`);
      }
    }
    await waitFor(async () => (await Promise.all(probes.map(ok))).every(Boolean), { timeoutMs: 120_000, intervalMs: 250, what: 'every service ready' });
  }, 240_000);

  afterAll(async () => {
    await Promise.all(procs.map((p) => stopProc(p)));
  }, 60_000);

  it('answers the probes of every service, and delivers a webhook from howk-api to the receiver', async () => {
    expect(procs.map((p) => p.role).sort()).toEqual(['echo', 'howk-api', 'howk-bridge-1', 'howk-reconciler-1', 'howk-scheduler-1', 'howk-worker-1', 'howk-worker-2']);
    const res = await fetch(`${api}/webhooks/demo/enqueue`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ endpoint: echoUrl, payload: { event: 'user.created', id: 123 } }),
    });
    expect(res.status).toBe(202);
    const { webhook_id } = (await res.json()) as { webhook_id: string };
    await waitFor(() => echo!.output().includes(`"webhook_id":"${webhook_id}"`), { timeoutMs: 60_000, intervalMs: 100, what: 'the delivery at the receiver' });
    const status = await waitFor(
      async () => {
        const s = (await (await fetch(`${api}/webhooks/${webhook_id}/status`)).json()) as { state?: string };
        return s.state === 'delivered' ? s : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 100, what: 'status delivered' },
    );
    expect(status.state).toBe('delivered');
  }, 120_000);
});
