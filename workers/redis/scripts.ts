import { readFileSync } from 'node:fs';
import type { ChainableCommander, Redis } from 'ioredis';

// The Lua scripts of the hot state, one file each under ./lua (headers name KEYS/ARGV/returns).
// Registered with defineCommand so ioredis sends EVALSHA and falls back to EVAL after a
// NOSCRIPT (a restarted or flushed Redis), on the client and inside pipelines alike.

const lua = (name: string): string => readFileSync(new URL(`./lua/${name}.lua`, import.meta.url), 'utf8');

/**
 * A script whose `--#include other` lines become `local function other(KEYS, ARGV) <other's
 * body> end`: the parameters shadow the globals, so the included script runs unchanged on the
 * keys and arguments it is given (used to run several per-webhook scripts in one call).
 */
const composed = (name: string): string => lua(name).replace(/^--#include (\w+)$/gm, (_, inc: string) => `local function ${inc}(KEYS, ARGV)\n${lua(inc)}\nend`);

export const SCRIPTS = {
  setStatus: { numberOfKeys: 2, lua: lua('setStatus') },
  claimRetries: { numberOfKeys: 1, lua: lua('claimRetries') },
  ackRetries: { numberOfKeys: 1, lua: lua('ackRetries') },
  renewLeases: { numberOfKeys: 1, lua: lua('renewLeases') },
  claimIdempotency: { numberOfKeys: 2, lua: lua('claimIdempotency') },
  releaseIdempotency: { numberOfKeys: 1, lua: lua('releaseIdempotency') },
  // Recovery and listing (workers/redis/recovery.ts).
  indexStatus: { numberOfKeys: 3, lua: lua('indexStatus') },
  restoreState: { numberOfKeys: 3, lua: lua('restoreState') },
  putDeadLetter: { numberOfKeys: 3, lua: lua('putDeadLetter') },
  renewLock: { numberOfKeys: 1, lua: lua('renewLock') },
  releaseLock: { numberOfKeys: 1, lua: lua('releaseLock') },
  holdPaused: { numberOfKeys: 2, lua: lua('holdPaused') },
  pauseScope: { numberOfKeys: 1, lua: lua('pauseScope') },
  resumeScope: { numberOfKeys: 1, lua: lua('resumeScope') },
  takeHeld: { numberOfKeys: 2, lua: lua('takeHeld') },
  dropHeld: { numberOfKeys: 2, lua: lua('dropHeld') },
  // A rebuild's guard state (core/reconcile/guard-replay.ts).
  restoreCircuit: { numberOfKeys: 1, lua: lua('restoreCircuit') },
  restoreHeld: { numberOfKeys: 2, lua: lua('restoreHeld') },
} as const;

/** Scripts taking any number of requests per call: the key count is each call's first argument. */
export const BATCH_SCRIPTS = {
  admitDelivery: composed('admitDelivery'),
  completeDelivery: composed('completeDelivery'),
  writeStatuses: composed('writeStatuses'),
} as const;

export type ScriptName = keyof typeof SCRIPTS;
export type BatchScriptName = keyof typeof BATCH_SCRIPTS;
type Arg = string | number;

// Prefixed so they can never shadow a built-in ioredis method.
const commandName = <N extends ScriptName | BatchScriptName>(n: N) => `howk_${n}` as const;

/** The script commands defineCommand adds, as seen on a client and on a pipeline. */
export type ScriptedClient = Redis & { [N in ScriptName | BatchScriptName as `howk_${N}`]: (...args: Arg[]) => Promise<unknown> };
export type ScriptedPipeline = ChainableCommander & { [N in ScriptName | BatchScriptName as `howk_${N}`]: (...args: Arg[]) => ScriptedPipeline };

/** Registers every script on the client (idempotent) and returns it typed with them. */
export const withScripts = (redis: Redis): ScriptedClient => {
  for (const [name, def] of Object.entries(SCRIPTS)) {
    if (!(commandName(name as ScriptName) in redis)) redis.defineCommand(commandName(name as ScriptName), { ...def });
  }
  for (const [name, code] of Object.entries(BATCH_SCRIPTS)) {
    if (!(commandName(name as BatchScriptName) in redis)) redis.defineCommand(commandName(name as BatchScriptName), { lua: code });
  }
  return redis as ScriptedClient;
};

export const scriptedPipeline = (redis: ScriptedClient): ScriptedPipeline => redis.pipeline() as ScriptedPipeline;
