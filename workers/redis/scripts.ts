import { readdirSync, readFileSync } from 'node:fs';
import type { ChainableCommander, Redis } from 'ioredis';

// The Redis server scripts, one file each under ./commands, named `<verbNoun>-<keys>.lua`
// (the number of KEYS it takes: the one place that count is written) or `<verbNoun>.lua` for
// a batch script (every key built from the arguments; KEYS none, or on a Redis Cluster one key
// naming the call's slot); ./commands/includes holds
// pieces only ever included. Each file's header names its KEYS/ARGV/returns. The fixed-key
// scripts are registered with defineCommand so ioredis sends EVALSHA and falls back to EVAL
// after a NOSCRIPT (a restarted or flushed Redis), on the client and inside pipelines alike;
// the batch scripts' calls do the same through workers/redis/script-call.ts.

const DIR = new URL('./commands/', import.meta.url);
const FILES = readdirSync(DIR);
const INCLUDES = new URL('./commands/includes/', import.meta.url);

/** The command file of a script: `name-<keys>.lua` or `name.lua`. */
const fileOf = (name: string): { file: string; keys: number | null } => {
  for (const f of FILES) {
    const m = /^(\w+?)(?:-(\d+))?\.lua$/.exec(f);
    if (m?.[1] === name) return { file: f, keys: m[2] === undefined ? null : Number(m[2]) };
  }
  throw new Error(`no Redis command file for ${name} in ${DIR.pathname}`);
};

const source = (name: string): string => {
  const include = new URL(`${name}.lua`, INCLUDES);
  try {
    return readFileSync(include, 'utf8');
  } catch {
    return readFileSync(new URL(fileOf(name).file, DIR), 'utf8');
  }
};

/**
 * A script whose `--#include other` lines become `local function other(KEYS, ARGV) <other's
 * body, its own includes composed alike> end`: the parameters shadow the globals, so the included script runs unchanged on the
 * keys and arguments it is given (used to run several per-webhook scripts in one call).
 */
const composed = (name: string): string => source(name).replace(/^--#include (\w+)$/gm, (_, inc: string) => `local function ${inc}(KEYS, ARGV)\n${composed(inc)}\nend`);

/** A script with a fixed number of KEYS, read from its file name. */
const fixed = (name: string): { numberOfKeys: number; lua: string } => {
  const { keys } = fileOf(name);
  if (keys === null) throw new Error(`${name}: a fixed-key script's file is named ${name}-<keys>.lua`);
  return { numberOfKeys: keys, lua: composed(name) };
};

/** A batch script: its file carries no key count. */
const batch = (name: string): string => {
  if (fileOf(name).keys !== null) throw new Error(`${name}: a batch script's file is named ${name}.lua`);
  return composed(name);
};

export const SCRIPTS = {
  addRetry: fixed('addRetry'),
  claimShard: fixed('claimShard'),
  dropLegacyRetries: fixed('dropLegacyRetries'),
  ackRetries: fixed('ackRetries'),
  renewLeases: fixed('renewLeases'),
  claimIdempotency: fixed('claimIdempotency'),
  releaseIdempotency: fixed('releaseIdempotency'),
  // Recovery and listing (workers/redis/recovery.ts).
  indexStatus: fixed('indexStatus'),
  restoreState: fixed('restoreState'),
  // restoreState's two halves, apart on a Redis Cluster (the status and the schedule are two slots').
  restoreStatus: fixed('restoreStatus'),
  restoreRetry: fixed('restoreRetry'),
  // The listing indexes on a Redis Cluster, beside the status writes.
  indexWebhook: fixed('indexWebhook'),
  putDeadLetter: fixed('putDeadLetter'),
  storeDeadLetter: fixed('storeDeadLetter'),
  indexDeadLetter: fixed('indexDeadLetter'),
  renewLock: fixed('renewLock'),
  releaseLock: fixed('releaseLock'),
  holdPaused: fixed('holdPaused'),
  pauseScope: fixed('pauseScope'),
  resumeScope: fixed('resumeScope'),
  takeHeld: fixed('takeHeld'),
  dropHeld: fixed('dropHeld'),
  // A Svix endpoint's throttleRate (core/apps/endpoint-rules.ts).
  takeToken: fixed('takeToken'),
  // The host's half of an admission on a Redis Cluster (workers/redis/guard-cluster.ts).
  takeHostLease: fixed('takeHostLease'),
  // A rebuild's guard state (core/reconcile/guard-replay.ts).
  restoreCircuit: fixed('restoreCircuit'),
  restoreHeld: fixed('restoreHeld'),
  // The edge's mirror of the API-key table (workers/redis/key-mirror.ts).
  mirrorKey: fixed('mirrorKey'),
} as const;

/**
 * Scripts taking any number of requests per call (no KEYS), as text: their calls are encoded by
 * hand and sent with workers/redis/script-call.ts, not through defineCommand.
 */
export const BATCH_SCRIPTS = {
  admitDelivery: batch('admitDelivery'),
  completeDelivery: batch('completeDelivery'),
  writeStatuses: batch('writeStatuses'),
  readEnded: batch('readEnded'),
  writeMarks: batch('writeMarks'),
} as const;

export type ScriptName = keyof typeof SCRIPTS;
type Arg = string | number;

// Prefixed so they can never shadow a built-in ioredis method.
const commandName = <N extends ScriptName>(n: N) => `howk_${n}` as const;

/** The script commands defineCommand adds, as seen on a client and on a pipeline. */
export type ScriptedClient = Redis & { [N in ScriptName as `howk_${N}`]: (...args: Arg[]) => Promise<unknown> };
export type ScriptedPipeline = ChainableCommander & { [N in ScriptName as `howk_${N}`]: (...args: Arg[]) => ScriptedPipeline };

/**
 * A script as a Redis Cluster runs it: the `#!lua` line makes Redis 7 refuse any key outside
 * the slot of the call's KEYS (without it a key of another slot that happens to live on the
 * same node passes, and fails only once a reshard moves it). A single Redis runs the scripts
 * as they are (Redis 6 does not know the line).
 */
export const forCluster = (lua: string): string => `#!lua\n${lua}`;

/** Registers every script on the client (idempotent) and returns it typed with them. */
export const withScripts = (redis: Redis): ScriptedClient => {
  for (const [name, def] of Object.entries(SCRIPTS)) {
    if (!(commandName(name as ScriptName) in redis))
      redis.defineCommand(commandName(name as ScriptName), { numberOfKeys: def.numberOfKeys, lua: redis.isCluster ? forCluster(def.lua) : def.lua });
  }
  return redis as ScriptedClient;
};

export const scriptedPipeline = (redis: ScriptedClient): ScriptedPipeline => redis.pipeline() as ScriptedPipeline;
