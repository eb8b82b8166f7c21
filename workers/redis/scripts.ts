import { readFileSync } from 'node:fs';
import type { ChainableCommander, Redis } from 'ioredis';

// The Lua scripts of the hot state, one file each under ./lua (headers name KEYS/ARGV/returns).
// Registered with defineCommand so ioredis sends EVALSHA and falls back to EVAL after a
// NOSCRIPT (a restarted or flushed Redis), on the client and inside pipelines alike.

const lua = (name: string): string => readFileSync(new URL(`./lua/${name}.lua`, import.meta.url), 'utf8');

export const SCRIPTS = {
  setStatus: { numberOfKeys: 2, lua: lua('setStatus') },
  claimRetries: { numberOfKeys: 1, lua: lua('claimRetries') },
  ackRetries: { numberOfKeys: 1, lua: lua('ackRetries') },
  renewLeases: { numberOfKeys: 1, lua: lua('renewLeases') },
  releaseIdempotency: { numberOfKeys: 1, lua: lua('releaseIdempotency') },
  // Recovery and listing (workers/redis/recovery.ts).
  indexStatus: { numberOfKeys: 3, lua: lua('indexStatus') },
  restoreState: { numberOfKeys: 3, lua: lua('restoreState') },
  putDeadLetter: { numberOfKeys: 3, lua: lua('putDeadLetter') },
  renewLock: { numberOfKeys: 1, lua: lua('renewLock') },
  releaseLock: { numberOfKeys: 1, lua: lua('releaseLock') },
  admitDelivery: { numberOfKeys: 6, lua: lua('admitDelivery') },
  completeDelivery: { numberOfKeys: 4, lua: lua('completeDelivery') },
  holdPaused: { numberOfKeys: 2, lua: lua('holdPaused') },
  dropHeld: { numberOfKeys: 2, lua: lua('dropHeld') },
} as const;

export type ScriptName = keyof typeof SCRIPTS;
type Arg = string | number;

// Prefixed so they can never shadow a built-in ioredis method.
const commandName = <N extends ScriptName>(n: N) => `howk_${n}` as const;

/** The script commands defineCommand adds, as seen on a client and on a pipeline. */
export type ScriptedClient = Redis & { [N in ScriptName as `howk_${N}`]: (...args: Arg[]) => Promise<unknown> };
export type ScriptedPipeline = ChainableCommander & { [N in ScriptName as `howk_${N}`]: (...args: Arg[]) => ScriptedPipeline };

/** Registers every script on the client (idempotent) and returns it typed with them. */
export const withScripts = (redis: Redis): ScriptedClient => {
  for (const [name, def] of Object.entries(SCRIPTS)) {
    if (!(commandName(name as ScriptName) in redis)) redis.defineCommand(commandName(name as ScriptName), { ...def });
  }
  return redis as ScriptedClient;
};

export const scriptedPipeline = (redis: ScriptedClient): ScriptedPipeline => redis.pipeline() as ScriptedPipeline;
