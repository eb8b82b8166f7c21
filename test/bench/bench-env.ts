// Settings of the benchmarks: their knobs (env numbers), the loopback Kafka and Redis they run
// on, and each run's own names (topics, log directory), so that runs never collide.
import { mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../core/config/load';
import { pidListening } from './busy-harness';

export const envNum = (name: string, def: number): number => {
  const v = process.env[name];
  if (v === undefined || v === '') return def;
  const n = Number(v);
  if (!Number.isFinite(n) || n < 0) throw new Error(`${name} must be a non-negative number, got ${JSON.stringify(v)}`);
  return n;
};
export const envInt = (name: string, def: number): number => Math.floor(envNum(name, def));
/** A knob that must be a whole number above 0 (a count of runs, a batch size). */
export const envPositiveInt = (name: string, def: number): number => {
  const n = Number(process.env[name] ?? def);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`${name} must be a positive integer`);
  return n;
};

export type Infra = { brokers: string; redisBase: string; redisUrl: string };
/**
 * KAFKA_BROKERS and REDIS_URL, both required and on 127.0.0.1 (benchmarks talk to nothing
 * else), with the run's Redis database in `redisUrl`. Exits 2 with `hint` when one is unset.
 */
export const loopbackInfra = (redisDb: number, hint: string): Infra => {
  const brokers = process.env.KAFKA_BROKERS;
  const redisBase = process.env.REDIS_URL;
  if (!brokers || !redisBase) {
    console.error(`KAFKA_BROKERS and REDIS_URL must be set: ${hint}`);
    process.exit(2);
  }
  for (const b of brokers.split(',')) if (!/^(127\.0\.0\.1|localhost):\d+$/.test(b.trim())) throw new Error(`the benchmark only talks to 127.0.0.1; KAFKA_BROKERS has ${b}`);
  const u = new URL(redisBase);
  if (!['127.0.0.1', 'localhost'].includes(u.hostname)) throw new Error(`the benchmark only talks to 127.0.0.1; REDIS_URL is ${redisBase}`);
  u.pathname = `/${redisDb}`;
  return { brokers, redisBase, redisUrl: u.toString() };
};

/**
 * The broker and Redis processes of the CPU tables, by the ports they listen on: one row each
 * on single servers ('kafka broker', 'redis-server'), a row per node (named by its port) when
 * KAFKA_BROKERS lists several or `clusterNodes` names a Redis Cluster.
 */
export const infraProcesses = (i: Infra, clusterNodes: string[]): { name: string; pid: number | undefined }[] => {
  const brokers = i.brokers.split(',').map((b) => Number(b.trim().split(':')[1]));
  const redis = clusterNodes.length ? clusterNodes.map((n) => Number(n.split(':')[1])) : [infraPorts(i).redis];
  return [
    ...brokers.map((port) => ({ name: brokers.length > 1 ? `kafka broker :${port}` : 'kafka broker', pid: pidListening(port) })),
    ...redis.map((port) => ({ name: redis.length > 1 ? `redis-server :${port}` : 'redis-server', pid: pidListening(port) })),
  ];
};

/** The port of the first broker and of Redis (to find their pids for the CPU tables). */
export const infraPorts = (i: Infra): { kafka: number; redis: number } => ({
  kafka: Number(i.brokers.split(',')[0]!.split(':')[1]),
  redis: Number(new URL(i.redisBase).port || 6379),
});

export type RunNames = { runId: string; topics: Record<string, string>; logDir: string };
/** A run id with `prefix`, every topic of the schema named after it, and a log directory. */
export const runNames = (prefix: string): RunNames => {
  const runId = `${prefix}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 6)}`;
  const topics = Object.fromEntries(Object.keys(loadConfig({ env: {} }).kafka.topics).map((k) => [k, `${runId}.${k}`]));
  const logDir = join(tmpdir(), runId);
  mkdirSync(logDir, { recursive: true });
  return { runId, topics, logDir };
};
