import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Kafka, logLevel } from 'kafkajs';
import { waitFor } from '../helpers/env';

// The chaos suite's own Kafka broker and Redis server, which it stops, kills and flushes:
// never the shared test servers. Ports start 100 above the shared ones (19092 → 19192,
// 16379 → 16479; HOWK_CHAOS_KAFKA_PORT / HOWK_CHAOS_REDIS_PORT choose the base), and each run
// takes a slot under a lock (/tmp/howk-chaos-<port>.lock): a second run on the same machine
// (another checkout, a CI job) takes the next slot (+10) instead of sharing - and stopping -
// the first one's servers.

const run = promisify(execFile);
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

const portOf = (url: string | undefined, fallback: number): number => {
  const m = /:(\d+)(?:\/\d*)?$/.exec((url ?? '').split(',')[0]!);
  return m ? Number(m[1]) : fallback;
};
const BASE_KAFKA = Number(process.env.HOWK_CHAOS_KAFKA_PORT ?? portOf(process.env.KAFKA_BROKERS, 19092) + 100);
const BASE_REDIS = Number(process.env.HOWK_CHAOS_REDIS_PORT ?? portOf(process.env.REDIS_URL, 16379) + 100);

type Slot = { kafka: number; redis: number; lock: string };
let slot: Slot | undefined;

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** The first slot whose lock is free or left behind by a dead process. */
const takeSlot = (): Slot => {
  for (let k = 0; k < 20; k++) {
    const s = { kafka: BASE_KAFKA + 10 * k, redis: BASE_REDIS + 10 * k, lock: `/tmp/howk-chaos-${BASE_KAFKA + 10 * k}.lock` };
    try {
      mkdirSync(s.lock);
    } catch {
      const holder = Number(readFileSync(join(s.lock, 'pid'), 'utf8').trim() || 0);
      if (holder && alive(holder)) continue;
      rmSync(s.lock, { recursive: true, force: true });
      mkdirSync(s.lock);
    }
    writeFileSync(join(s.lock, 'pid'), String(process.pid));
    return s;
  }
  throw new Error('no free chaos slot (20 runs in parallel?)');
};

const current = (): Slot => {
  if (!slot) throw new Error('chaosInfra.start() first');
  return slot;
};
const kafkaEnv = (s: Slot) => ({ KAFKA_PORT: String(s.kafka), KAFKA_CONTROLLER_PORT: String(s.kafka + 1), KAFKA_DATA_DIR: `/tmp/howk-chaos-kafka-${s.kafka}` });
const redisEnv = (s: Slot) => ({ REDIS_PORT: String(s.redis) });

const script = async (name: 'kafka.sh' | 'redis.sh', env: Record<string, string>, ...args: string[]): Promise<string> => {
  const { stdout } = await run('bash', [join(root, 'scripts/infra', name), ...args], { env: { ...process.env, ...env }, maxBuffer: 1 << 20 });
  return stdout;
};

export const chaosInfra = {
  get brokers() {
    return `127.0.0.1:${current().kafka}`;
  },
  get redisUrl() {
    return `redis://127.0.0.1:${current().redis}`;
  },
  /** Takes a slot, clears what a crashed run may have left on it, starts both servers (Kafka empty). */
  start: async () => {
    const s = (slot = takeSlot());
    await script('kafka.sh', kafkaEnv(s), 'stop').catch(() => '');
    await script('redis.sh', redisEnv(s), 'stop').catch(() => '');
    await script('redis.sh', redisEnv(s), 'start');
    await script('kafka.sh', kafkaEnv(s), 'start', '--fresh');
  },
  startKafka: () => script('kafka.sh', kafkaEnv(current()), 'start'),
  /** SIGTERM, data kept (the same broker comes back with its topics and offsets). */
  stopKafka: () => script('kafka.sh', kafkaEnv(current()), 'stop', '--keep-data'),
  startRedis: () => script('redis.sh', redisEnv(current()), 'start'),
  /** SHUTDOWN NOSAVE: the server comes back empty (no persistence), as after a lost node. */
  stopRedis: () => script('redis.sh', redisEnv(current()), 'stop'),
  /** Everything this run started, the broker's data, and the slot. */
  stop: async () => {
    if (!slot) return;
    const s = slot;
    await script('kafka.sh', kafkaEnv(s), 'stop').catch(() => '');
    await script('redis.sh', redisEnv(s), 'stop').catch(() => '');
    rmSync(kafkaEnv(s).KAFKA_DATA_DIR, { recursive: true, force: true });
    rmSync(s.lock, { recursive: true, force: true });
    slot = undefined;
  },
};

/** Waits until the consumer group is stable with `n` members. */
export const workersJoined = async (group: string, n: number) => {
  const admin = new Kafka({ clientId: 'chaos-group-check', brokers: [chaosInfra.brokers], logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  try {
    await waitFor(
      async () => {
        const [g] = (await admin.describeGroups([group])).groups;
        return g?.state === 'Stable' && g.members.length === n;
      },
      { timeoutMs: 120_000, intervalMs: 250, what: `${n} workers in ${group}` },
    );
  } finally {
    await admin.disconnect();
  }
};
