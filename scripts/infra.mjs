// Starts real Kafka + Redis (scripts/infra/up.sh) unless KAFKA_BROKERS and REDIS_URL are
// given, runs the callback with them in the environment, and stops what it started.
import { execFileSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

export const withInfra = async (fn) => {
  const given = process.env.KAFKA_BROKERS && process.env.REDIS_URL;
  let started = false;
  if (!given) {
    console.error('[infra] starting Kafka (KRaft, Apache jars) and Redis on 127.0.0.1 …');
    const t0 = Date.now();
    const out = execFileSync('bash', [join(root, 'scripts/infra/up.sh')], { stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8' });
    for (const line of out.split('\n')) {
      const m = /^(KAFKA_BROKERS|REDIS_URL)=(.+)$/.exec(line.trim());
      if (m) process.env[m[1]] = m[2];
    }
    if (!process.env.KAFKA_BROKERS || !process.env.REDIS_URL) throw new Error('scripts/infra/up.sh did not report KAFKA_BROKERS and REDIS_URL');
    console.error(`[infra] ready in ${((Date.now() - t0) / 1000).toFixed(1)} s: KAFKA_BROKERS=${process.env.KAFKA_BROKERS} REDIS_URL=${process.env.REDIS_URL}`);
    started = true;
  }
  const stop = () => {
    if (!started) return;
    started = false;
    try {
      execFileSync('bash', [join(root, 'scripts/infra/down.sh')], { stdio: 'inherit' });
    } catch (e) {
      console.error('[infra] stop failed:', e.message);
    }
  };
  process.on('SIGINT', () => {
    stop();
    process.exit(130);
  });
  try {
    return await fn();
  } finally {
    stop();
  }
};

export { root };
