import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import kafkajs from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { endpointHash } from '../../core/domain/ids';
import { createTopicsVisible } from '../../workers/kafka/create-topics';
import { requireEnv, uniq, waitFor } from '../helpers/env';
import { startTestFleet, type TestFleet } from '../helpers/fleet';
import { freePort } from '../helpers/procs';
import { startReceiver, type Receiver } from '../helpers/receiver';
import { redisUrlOf } from '../helpers/redis-db';

// The `howk` CLI run as a process (bin/howk.mjs) against a fleet on real Kafka + Redis (a db
// and topics of its own): operator commands over the HTTP API, doctor and topics migrate
// over Kafka and Redis directly.

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
type Run = { code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string };

const start = (args: string[], env: Record<string, string>): { child: ChildProcess; done: Promise<Run> } => {
  const child = spawn(process.execPath, [join(root, 'bin', 'howk.mjs'), ...args], { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (b: Buffer) => (stdout += b.toString()));
  child.stderr!.on('data', (b: Buffer) => (stderr += b.toString()));
  const done = new Promise<Run>((r) => child.on('close', (code, signal) => r({ code, signal, stdout, stderr })));
  return { child, done };
};

describe('howk CLI', () => {
  let rx: Receiver;
  let f: TestFleet;
  let env: Record<string, string>;
  let failing = true;
  const dir = mkdtempSync(join(tmpdir(), 'howk-cli-'));
  const howk = (args: string[], extra: Record<string, string> = {}) => start(args, { ...env, ...extra }).done;
  const json = (r: Run) => {
    expect(r.stderr, r.stderr).not.toMatch(/^howk: /m);
    return JSON.parse(r.stdout) as any;
  };
  const topicEnv = (topics: Record<string, string>) => Object.fromEntries(Object.entries(topics).map(([k, v]) => [`HOWK_KAFKA_TOPICS_${k.toUpperCase()}`, v]));

  beforeAll(async () => {
    rx = await startReceiver(() => (failing ? { status: 400, body: 'no' } : { status: 200 }));
    f = await startTestFleet('kafka', { overrides: { 'circuit_breaker.enabled': false } });
    env = {
      HOWK_URL: f.baseUrl,
      HOWK_KAFKA_BROKERS: requireEnv('KAFKA_BROKERS'),
      HOWK_REDIS_URL: redisUrlOf(f.redisDb!),
      HOWK_KAFKA_PARTITIONS: String(f.config.kafka.partitions),
      HOWK_KAFKA_CONSUMER_GROUP: f.config.kafka.consumer_group,
      ...topicEnv(f.config.kafka.topics),
    };
  }, 120_000);

  afterAll(async () => {
    await f?.stop();
    await rx?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const enqueue = async (config: string, path: string, n: number, extra: Record<string, unknown> = {}) => {
    const ids: string[] = [];
    for (let i = 0; i < n; i += 100) {
      const items = Array.from({ length: Math.min(100, n - i) }, (_, j) => ({ endpoint: rx.url(path), payload: { n: i + j }, ...extra }));
      const res = await f.post(`/webhooks/${config}/enqueue/batch`, { webhooks: items });
      expect(res.status).toBe(202);
      ids.push(...((await res.json()) as any).results.map((r: any) => r.webhook_id));
    }
    return ids;
  };
  const state = async (id: string) => ((await (await fetch(`${f.baseUrl}/webhooks/${id}/status`)).json()) as any).state;

  it('bad input: an unknown flag or a bad duration is a clear message and exit 2', async () => {
    const unknown = await howk(['deliveries', 'list', '--config-id', 'x', '--bogus']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("unknown option '--bogus'");
    const duration = await howk(['doctor', 'burst', '--timeout', '30q']);
    expect(duration.code).toBe(2);
    expect(duration.stderr).toContain('not a duration: "30q"');
  });

  it('status and deliveries list (--json, filters, paging)', async () => {
    failing = false;
    const [ok] = await enqueue('cli-list', '/ok', 1);
    await waitFor(async () => (await state(ok!)) === 'delivered', { what: 'delivered' });
    failing = true;
    const bad = await enqueue('cli-list', '/bad', 3, { max_attempts: 1 });
    await waitFor(async () => (await Promise.all(bad.map(state))).every((s) => s === 'failed'), { what: 'failed' });

    const s = json(await howk(['--json', 'status', ok!]));
    expect(s).toMatchObject({ webhook_id: ok, state: 'delivered', attempts: 1 });
    expect((await howk(['status', ok!])).stdout).toMatch(/state\s+delivered/);

    const page1 = json(await howk(['--json', 'deliveries', 'list', '--config-id', 'cli-list', '--state', 'failed', '--limit', '2']));
    expect(page1.count).toBe(2);
    expect(page1.items.every((w: any) => w.state === 'failed')).toBe(true);
    expect(page1.next_cursor).toBeTruthy();
    const page2 = json(await howk(['--json', 'deliveries', 'list', '--config-id', 'cli-list', '--state', 'failed', '--cursor', page1.next_cursor]));
    expect([...page1.items, ...page2.items].map((w: any) => w.webhook_id).sort()).toEqual([...bad].sort());
    const byEndpoint = json(await howk(['--json', 'deliveries', 'list', '--config-id', 'cli-list', '--endpoint', rx.url('/ok')]));
    expect(byEndpoint.items.map((w: any) => w.webhook_id)).toEqual([ok]);
    const future = json(await howk(['--json', 'deliveries', 'list', '--config-id', 'cli-list', '--since', new Date(Date.now() + 60_000).toISOString()]));
    expect(future.count).toBe(0);
  }, 120_000);

  it('endpoints pause holds deliveries, resume releases them', async () => {
    failing = false;
    const url = rx.url('/paused');
    const paused = json(await howk(['--json', 'endpoints', 'pause', url]));
    expect(paused).toEqual({ endpoint_hash: await endpointHash(url), paused: true });
    expect(json(await howk(['--json', 'endpoints', 'show', url])).paused).toBe(true);
    const [id] = await enqueue('cli-pause', '/paused', 1);
    await new Promise((r) => setTimeout(r, 1500));
    expect(rx.received.filter((r) => r.path === '/paused')).toHaveLength(0);
    const resumed = await howk(['endpoints', 'resume', await endpointHash(url)]);
    expect(resumed.code).toBe(0);
    expect(resumed.stdout).toContain('resumed');
    await waitFor(async () => (await state(id!)) === 'delivered', { what: 'delivered after resume' });
    expect(json(await howk(['--json', 'endpoints', 'show', url])).paused).toBe(false);
  }, 60_000);

  it('dlq replay: 1,000 dead letters, dry run first, progress on stderr, a killed run resumed replays each once', async () => {
    failing = true;
    const dead = await enqueue('cli-dlq', '/dead', 1000, { max_attempts: 1 });
    // Distinct webhooks: one dead-lettered twice (an attempt redelivered under load) is listed twice.
    const listed = async () => {
      const ids = new Set<string>();
      let cursor: string | undefined;
      do {
        const page = (await (await fetch(`${f.baseUrl}/deadletter?config_id=cli-dlq&limit=500${cursor ? `&cursor=${cursor}` : ''}`)).json()) as any;
        for (const d of page.items) ids.add(d.webhook_id);
        cursor = page.next_cursor ?? undefined;
      } while (cursor);
      return ids.size;
    };
    await waitFor(async () => (await listed()) === 1000, { timeoutMs: 180_000, intervalMs: 500, what: '1,000 dead letters' });
    const list = json(await howk(['--json', 'dlq', 'list', '--config-id', 'cli-dlq', '--limit', '600']));
    expect(list.count).toBe(600);
    expect(list.next_cursor).toBeTruthy();

    const dry = json(await howk(['--json', 'dlq', 'replay', '--config-id', 'cli-dlq', '--dry-run']));
    expect(dry.count).toBe(1000);
    expect(new Set(dry.items.map((d: any) => d.webhook_id))).toEqual(new Set(dead));
    failing = false;
    await new Promise((r) => setTimeout(r, 500));
    expect(rx.received.filter((r) => r.path === '/dead' && !dead.includes(String(r.headers['webhook-id'])))).toHaveLength(0);

    // First run: killed once it has finished two pages (the resume file says so).
    const file = join(dir, 'replay.json');
    const args = ['--json', 'dlq', 'replay', '--config-id', 'cli-dlq', '--resume-file', file, '--concurrency', '2'];
    const first = start(args, env);
    await waitFor(() => existsSync(file) && (JSON.parse(readFileSync(file, 'utf8')) as any).replayed >= 200, { timeoutMs: 120_000, intervalMs: 20, what: 'two pages replayed' });
    first.child.kill('SIGKILL');
    const killed = await first.done;
    expect(killed.signal).toBe('SIGKILL');
    expect((JSON.parse(readFileSync(file, 'utf8')) as any).done).toBe(false);
    expect(killed.stderr).toContain('replay [');

    const second = await howk(args);
    expect(second.code, second.stderr).toBe(0);
    expect(second.stderr).toMatch(/replay \[.*\] \d+\/\d+ dead letters/);
    const summary = json(second);
    expect(summary.failed).toBe(0);
    expect(summary.replayed + summary.already_replayed).toBe(1000);

    // Every dead letter replayed once: 1,000 new webhooks, one per dead one, each delivered once.
    const replays = async () => {
      const out: any[] = [];
      let cursor: string | undefined;
      do {
        const page = (await (await fetch(`${f.baseUrl}/webhooks?config_id=cli-dlq&limit=500${cursor ? `&cursor=${cursor}` : ''}`)).json()) as any;
        out.push(...page.items.filter((w: any) => w.replay_of));
        cursor = page.next_cursor ?? undefined;
      } while (cursor);
      return out;
    };
    const rows = await replays();
    expect(rows).toHaveLength(1000);
    expect(new Set(rows.map((w) => w.replay_of))).toEqual(new Set(dead));
    const deliveredReplays = () => rx.received.filter((r) => r.path === '/dead' && !dead.includes(String(r.headers['webhook-id'])));
    await waitFor(() => deliveredReplays().length >= 1000, { timeoutMs: 120_000, what: '1,000 replays delivered' });
    await new Promise((r) => setTimeout(r, 1000));
    expect(new Set(deliveredReplays().map((r) => r.headers['webhook-id'])).size).toBe(1000);
    expect(deliveredReplays()).toHaveLength(1000);

    // Run again with the same file: complete, nothing replayed.
    const third = await howk(args);
    expect(third.code).toBe(0);
    expect(third.stderr).toContain('complete already');
    expect(await replays()).toHaveLength(1000);
  }, 600_000);

  it('doctor: a healthy set-up passes (exit 0), with the burst figure', async () => {
    const r = await howk(['--json', 'doctor', '--burst', '1000']);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const d = json(r);
    expect(d.ok).toBe(true);
    const byName = new Map(d.checks.map((c: any) => [c.check, c]));
    for (const name of ['kafka', 'redis', 'clock skew', 'canary', `topic ${f.config.kafka.topics.pending}`, `topic ${f.config.kafka.topics.state}`]) {
      expect((byName.get(name) as any)?.status, name).toBe('ok');
    }
    expect((byName.get('consumer lag') as any).data.length).toBe(2 * f.config.kafka.partitions);
    // kafka.session_timeout against the brokers' group.min.session.timeout.ms: a warning (with the
    // broker setting to change) when the brokers would make workers join with a longer one.
    const session = byName.get('consumer session timeout') as any;
    expect(session.data.session_timeout_ms).toBe(f.config.kafka.session_timeout);
    expect(session.status).toBe(session.data.broker_min_ms > session.data.session_timeout_ms ? 'warn' : 'ok');
    if (session.status === 'warn') expect(session.fix).toContain('group.min.session.timeout.ms=');
    expect(d.burst[0].report.absorbable).toBeGreaterThan(0);
    const human = await howk(['doctor']);
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(/^ok\s+redis\s+reachable at .*Redis \d/m);
    expect(human.stdout).toContain('all checks passed');
  }, 60_000);

  it('doctor fails on topics with fewer partitions than the config (exit 1) and says how to fix it', async () => {
    const r = await howk(['doctor'], { HOWK_KAFKA_PARTITIONS: String(f.config.kafka.partitions + 2) });
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(
      new RegExp(
        `^FAIL\\s+topic ${f.config.kafka.topics.pending.replace(/\./g, '\\.')}\\s+${f.config.kafka.partitions} partition\\(s\\), the config asks ${f.config.kafka.partitions + 2}`,
        'm',
      ),
    );
    expect(r.stdout).toContain('howk topics migrate');
  }, 60_000);

  it('doctor fails when Redis is down (exit 1): says Redis is unreachable', async () => {
    const port = await freePort();
    const r = await howk(['doctor'], { HOWK_REDIS_URL: `redis://127.0.0.1:${port}/0` });
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(new RegExp(`^FAIL\\s+redis\\s+Redis unreachable at redis://127\\.0\\.0\\.1:${port}/0`, 'm'));
    expect(r.stdout).toMatch(/^ok\s+kafka/m);
  }, 60_000);

  it('topics migrate: the dry run changes nothing; the migration raises partitions and sets retention', async () => {
    const p = uniq('tm');
    const topics = Object.fromEntries(Object.keys(f.config.kafka.topics).map((k) => [k, `${p}.${k}`])) as Record<string, string>;
    const admin = new kafkajs.Kafka({ brokers: requireEnv('KAFKA_BROKERS').split(','), logLevel: kafkajs.logLevel.NOTHING }).admin();
    await admin.connect();
    try {
      await createTopicsVisible(admin, [{ topic: topics.pending!, numPartitions: 2, configEntries: [{ name: 'retention.ms', value: '60000' }] }]);
      const own = { ...env, ...topicEnv(topics), HOWK_KAFKA_PARTITIONS: '3', HOWK_KAFKA_RETENTION: '2h' };
      const partitions = async () => (await admin.fetchTopicMetadata({ topics: [topics.pending!] })).topics[0]!.partitions.length;

      const dry = json(await howk(['--json', 'topics', 'migrate', '--dry-run'], own));
      expect(dry.steps).toContainEqual({ kind: 'partitions', topic: topics.pending, from: 2, to: 3 });
      expect(dry.steps).toContainEqual({ kind: 'config', topic: topics.pending, name: 'retention.ms', from: '60000', to: '7200000' });
      expect(dry.steps).toContainEqual({ kind: 'create', topic: topics.guards, partitions: 1, replicationFactor: 1 });
      expect(await partitions()).toBe(2);
      expect((await howk(['doctor'], own)).code).toBe(1);

      const run = await howk(['topics', 'migrate'], own);
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout).toContain(`raise ${topics.pending} from 2 to 3 partitions`);
      expect(await partitions()).toBe(3);
      const again = json(await howk(['--json', 'topics', 'migrate', '--dry-run'], own));
      expect(again.steps).toEqual([]);
      const doctor = json(await howk(['--json', 'doctor'], own));
      expect(doctor.checks.find((c: any) => c.check === `topic ${topics.pending}`)).toMatchObject({ status: 'ok', data: { partitions: 3, 'retention.ms': 7_200_000 } });
    } finally {
      await admin.deleteTopics({ topics: Object.values(topics) }).catch(() => {});
      await admin.disconnect();
    }
  }, 120_000);
});
