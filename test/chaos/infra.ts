import { execFile } from 'node:child_process';
import { rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

// The chaos suite's own Kafka broker and Redis server, on ports nobody else uses, so that
// stopping, killing and flushing them never disturbs the shared test servers (19092, 16379).

const run = promisify(execFile);
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

export const CHAOS_KAFKA_PORT = 19192;
export const CHAOS_REDIS_PORT = 16479;
const KAFKA_ENV = { KAFKA_PORT: String(CHAOS_KAFKA_PORT), KAFKA_CONTROLLER_PORT: String(CHAOS_KAFKA_PORT + 1), KAFKA_DATA_DIR: '/tmp/howk-chaos-kafka' };
const REDIS_ENV = { REDIS_PORT: String(CHAOS_REDIS_PORT) };

const script = async (name: 'kafka.sh' | 'redis.sh', env: Record<string, string>, ...args: string[]): Promise<string> => {
  const { stdout } = await run('bash', [join(root, 'scripts/infra', name), ...args], { env: { ...process.env, ...env }, maxBuffer: 1 << 20 });
  return stdout;
};

export const chaosInfra = {
  brokers: `127.0.0.1:${CHAOS_KAFKA_PORT}`,
  redisUrl: `redis://127.0.0.1:${CHAOS_REDIS_PORT}`,
  /** Both servers, Kafka from an empty data dir. */
  start: async () => {
    await script('redis.sh', REDIS_ENV, 'start');
    await script('kafka.sh', KAFKA_ENV, 'start', '--fresh');
  },
  startKafka: () => script('kafka.sh', KAFKA_ENV, 'start'),
  /** SIGTERM, data kept (the same broker comes back with its topics and offsets). */
  stopKafka: () => script('kafka.sh', KAFKA_ENV, 'stop', '--keep-data'),
  startRedis: () => script('redis.sh', REDIS_ENV, 'start'),
  /** SHUTDOWN NOSAVE: the server comes back empty (no persistence), as after a lost node. */
  stopRedis: () => script('redis.sh', REDIS_ENV, 'stop'),
  /** Everything this suite started, and the broker's data. */
  stop: async () => {
    await script('kafka.sh', KAFKA_ENV, 'stop').catch(() => '');
    await script('redis.sh', REDIS_ENV, 'stop').catch(() => '');
    rmSync(KAFKA_ENV.KAFKA_DATA_DIR, { recursive: true, force: true });
  },
};
