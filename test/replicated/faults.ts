import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import kafkajs from 'kafkajs';
import { uniq, waitFor } from '../helpers/env';
import { freePort, spawnRole, stopProc, type Proc } from '../helpers/procs';
import { fleetSettings, type Client, type Receiver } from '../chaos/harness';
import { traceDuplicates } from '../chaos/trace';
import { tellHistory } from '../chaos/history';

// The parts of the fault tests on the scaled set-up (test/replicated/faults-*.cluster.test.ts):
// a Redis Cluster that is theirs alone (they kill and freeze its nodes, so never the one
// REDIS_CLUSTER_NODES names nor the 17100 one the other files share), Howk's binaries as
// processes on whatever Kafka and Redis they are given, and the figures every fault reports.

const run = promisify(execFile);
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A 3-master, 3-replica Redis Cluster on base..base+5 (HOWK_REPLICATED_FAULT_REDIS_PORT, default 17110). */
export const faultRedisCluster = (base = Number(process.env.HOWK_REPLICATED_FAULT_REDIS_PORT ?? 17110)) => {
  const ports = Array.from({ length: 6 }, (_, i) => base + i);
  const script = async (...args: string[]) =>
    (await run('bash', [join(root, 'scripts/infra/redis-cluster.sh'), ...args], { env: { ...process.env, REDIS_CLUSTER_PORT: String(base) }, timeout: 120_000 })).stdout;
  const node = (port: number) => new Redis({ host: '127.0.0.1', port, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 1000 });
  const ask = async <T>(port: number, fn: (r: Redis) => Promise<T>): Promise<T | undefined> => {
    const r = node(port);
    r.on('error', () => {});
    try {
      await r.connect();
      return await fn(r);
    } catch {
      return undefined;
    } finally {
      r.disconnect();
    }
  };
  const info = (port: number) => ask(port, (r) => r.info('replication'));
  const pid = (port: number) => Number(readFileSync(`/tmp/howk-redis-cluster-${base}/${port}/redis.pid`, 'utf8').trim());
  return {
    ports,
    nodes: ports.map((p) => `127.0.0.1:${p}`),
    /** Starts it empty (what a crashed run left is stopped first), every master with its replica in sync. */
    start: async () => {
      await script('stop').catch(() => '');
      await script('start');
      await waitFor(async () => (await Promise.all(ports.map(info))).filter((i) => /connected_slaves:1\b/.test(i ?? '')).length === 3, {
        timeoutMs: 30_000,
        intervalMs: 200,
        what: 'every master with a replica attached',
      });
    },
    stop: () => script('stop'),
    /** Starts the nodes that are down; a killed one comes back empty and rejoins from its nodes.conf. */
    restart: () => script('start'),
    kill9: (port: number) => script('kill9', String(port)),
    /** SIGSTOP / SIGCONT to every node: a cluster that holds connections open and answers nothing. */
    signalAll: (sig: 'SIGSTOP' | 'SIGCONT') => ports.forEach((p) => process.kill(pid(p), sig)),
    role: async (port: number) => /role:(\w+)/.exec((await info(port)) ?? '')?.[1],
    /** The masters (by port), with the number of keys each holds. */
    masters: async () => {
      const out: { port: number; keys: number }[] = [];
      for (const p of ports) {
        const r = await ask(p, async (c) => ({ role: /role:(\w+)/.exec(await c.info('replication'))?.[1], keys: await c.dbsize() }));
        if (r?.role === 'master') out.push({ port: p, keys: r.keys });
      }
      return out;
    },
    stateOk: async (port: number) => /cluster_state:ok/.test((await ask(port, (r) => r.cluster('INFO'))) ?? ''),
  };
};

export type FaultFleet = Awaited<ReturnType<typeof faultFleet>>;

/** howk-api, workers and a scheduler as processes on `infra` (HOWK_KAFKA_BROKERS and a Redis), topics of their own. */
export const faultFleet = async (name: string, infra: Record<string, string>, workers = 2) => {
  const prefix = uniq(`fault-${name}`);
  const port = await freePort();
  const env: Record<string, string> = {
    HOWK_API_PORT: String(port),
    HOWK_API_HOST: '127.0.0.1',
    HOWK_API_AUTH_ENABLED: 'false',
    ...fleetSettings(prefix),
    HOWK_LOG_LEVEL: process.env.HOWK_FAULT_LOGS ? 'info' : 'warn',
    ...infra,
  };
  const procs: Proc[] = [spawnRole('api', env), spawnRole('scheduler', env)];
  for (let i = 0; i < workers; i++) procs.push(spawnRole('worker', env));
  const baseUrl = `http://127.0.0.1:${port}`;
  const output = () => procs.map((p) => `--- ${p.role}\n${p.output().slice(-3000)}`).join('\n');
  const stop = async () => {
    await Promise.all(procs.map((p) => stopProc(p)));
    // HOWK_FAULT_LOGS=1: every process's info-level output, kept in .tmp/fault-logs/<fleet>/.
    if (!process.env.HOWK_FAULT_LOGS) return;
    mkdirSync(join(root, '.tmp', 'fault-logs', prefix), { recursive: true });
    procs.forEach((p, i) => writeFileSync(join(root, '.tmp', 'fault-logs', prefix, `${i}-${p.role}.log`), p.output()));
  };
  try {
    await waitFor(async () => (await fetch(`${baseUrl}/ready`).catch(() => undefined))?.status === 200, { timeoutMs: 120_000, what: 'howk-api ready' });
    // Every worker in the group before traffic starts, so that no join moves partitions mid-fault.
    const admin = new kafkajs.Kafka({ clientId: `${prefix}-check`, brokers: env.HOWK_KAFKA_BROKERS!.split(','), logLevel: kafkajs.logLevel.NOTHING }).admin();
    await admin.connect();
    try {
      await waitFor(
        async () => {
          const [g] = (await admin.describeGroups([`${prefix}-workers`])).groups;
          return g?.state === 'Stable' && g.members.length === workers;
        },
        { timeoutMs: 120_000, intervalMs: 250, what: `${workers} workers in the group` },
      );
    } finally {
      await admin.disconnect();
    }
  } catch (e) {
    await stop();
    throw new Error(`${(e as Error).message}\n${output()}`);
  }
  const logs = () => procs.map((p) => ({ role: p.role, out: p.output() }));
  return { prefix, env, baseUrl, output, logs, stop };
};

/** What Howk says of a webhook that never arrived, and what reached the receiver of it. */
const whereIs = async (baseUrl: string, id: string, rx: Receiver) => ({
  id,
  status: await fetch(`${baseUrl}/webhooks/${id}/status`)
    .then((r) => r.json())
    .catch((e: Error) => e.message),
  requests: rx.byId.get(id)?.requests ?? 0,
  log: rx.byId.get(id)?.log,
});

export type FaultFigures = {
  fault: string;
  sent: number;
  delivered: number;
  lost: number;
  duplicates: number;
  refused: number;
  first_delivery_after_fault_ms: number;
  longest_stall_ms: number;
  /** The longest an accepted webhook waited for its first attempt (a partition or slot that stalled). */
  longest_first_wait_ms: number;
  seconds: number;
  notes: Record<string, unknown>;
};

/**
 * Waits (up to 4 min) until every accepted webhook is delivered (a dead letter counts as lost: every
 * endpoint here accepts in the end), then counts. The stall is the longest time without a 2xx
 * from the fault until the last webhook was accepted (the stream is steady until then).
 */
export const faultFigures = async (
  fleet: FaultFleet,
  fault: string,
  client: Client,
  rx: Receiver,
  at: { start: number; fault: number },
  notes: Record<string, unknown>,
  settleMs = 240_000,
): Promise<FaultFigures> => {
  await client.done;
  const lastAccepted = Math.max(...client.acceptedAt.values());
  const delivered = () => [...client.accepted.keys()].filter((id) => (rx.byId.get(id)?.ok ?? 0) > 0).length;
  await waitFor(() => delivered() === client.accepted.size, { timeoutMs: settleMs, intervalMs: 500 }).catch(() => undefined);
  // How long the backlog took to drain (to the 500 ms of the wait's polling): on the loaded
  // machine the workers can run tens of seconds behind, and a retry re-enqueued then waits
  // behind them on the pending topic.
  notes.drained_ms_after_last_accept = Date.now() - lastAccepted;
  let duplicates = 0;
  const byKind: Record<string, number> = {};
  for (const [id, kind] of client.accepted) {
    const extra = Math.max(0, (rx.byId.get(id)?.ok ?? 0) - 1);
    duplicates += extra;
    if (extra) byKind[kind] = (byKind[kind] ?? 0) + extra;
  }
  if (duplicates) notes.duplicates_by_kind = byKind;
  const missing = [...client.accepted.keys()].filter((id) => !rx.byId.get(id)?.ok);
  if (missing.length) {
    notes.missing = await Promise.all(missing.slice(0, 5).map((id) => whereIs(fleet.baseUrl, id, rx)));
    // Where it was dropped: its records on the fleet's topics and the log lines naming it.
    const brokers = fleet.env.HOWK_KAFKA_BROKERS!.split(',');
    notes.history = await tellHistory({ brokers, prefix: fleet.prefix, logs: fleet.logs() }, missing, (id) => rx.byId.get(id)?.log ?? []);
  }
  if (process.env.HOWK_CHAOS_TRACE) traceDuplicates(rx, client);
  const first = rx.firstOkAfter(at.fault);
  let longestWait = 0;
  let before = 0; // the same, of webhooks accepted before the fault: what the loaded machine costs without it
  for (const [id, t] of client.acceptedAt) {
    const wait = (rx.byId.get(id)?.first ?? t) - t;
    longestWait = Math.max(longestWait, wait);
    if (t < at.fault) before = Math.max(before, Math.min(wait, at.fault - t));
  }
  notes.longest_first_wait_before_fault_ms = before;
  return {
    fault,
    sent: client.accepted.size,
    delivered: delivered(),
    lost: client.accepted.size - delivered(),
    duplicates,
    refused: client.refusals.length,
    first_delivery_after_fault_ms: first === undefined ? -1 : first - at.fault,
    longest_stall_ms: rx.longestStall(at.fault, lastAccepted),
    longest_first_wait_ms: longestWait,
    seconds: Math.round((Date.now() - at.start) / 1000),
    notes,
  };
};

export const formatFault = (f: FaultFigures): string =>
  `fault ${f.fault}: sent ${f.sent}, delivered ${f.delivered}, lost ${f.lost}, duplicates ${f.duplicates}, refused ${f.refused}, ` +
  `first delivery after the fault ${f.first_delivery_after_fault_ms} ms, longest stall ${f.longest_stall_ms} ms, longest wait for a first attempt ${f.longest_first_wait_ms} ms, run ${f.seconds} s ${JSON.stringify(f.notes)}`;
