import { createHash } from 'node:crypto';
import { Command, type Redis } from 'ioredis';
import { bulk, type RespArgs } from './resp';

// A batch script call (KEYS: none, or the one key that names its slot) sent as one pre-encoded command through ioredis's
// own queue: ioredis still owns the connection, the offline queue while reconnecting, the
// resending of unanswered commands after a reconnect, the command timeout and the reply
// parsing; only the encoding of the arguments is done here (workers/redis/resp.ts), once.
// EVALSHA first; a NOSCRIPT answer (a restarted or flushed Redis, or the first call of this
// script text) sends the same command once more as EVAL, which also loads the script.

export type BatchScript = { readonly lua: string; readonly sha: string };

export const batchScript = (lua: string): BatchScript => ({ lua, sha: createHash('sha1').update(lua).digest('hex') });

/**
 * The bytes of one call: EVALSHA <sha> 0 <args>, or EVAL <lua> 0 <args>; with a slot key,
 * numkeys 1 and that key first (a cluster routes the call by it and refuses a key of another
 * slot inside; the scripts build their keys from ARGV and only route by it).
 */
export const scriptCallText = (script: BatchScript, args: RespArgs, by: 'evalsha' | 'eval', slotKey?: string): string =>
  slotKey === undefined
    ? `*${args.count + 3}\r\n${bulk(by)}${bulk(by === 'evalsha' ? script.sha : script.lua)}$1\r\n0\r\n${args.text}`
    : `*${args.count + 4}\r\n${bulk(by)}${bulk(by === 'evalsha' ? script.sha : script.lua)}$1\r\n1\r\n${bulk(slotKey)}${args.text}`;

class ScriptCommand extends Command {
  private retried = false;

  constructor(
    private readonly redis: Redis,
    private readonly script: BatchScript,
    private readonly callArgs: RespArgs,
    private readonly slotKey?: string,
  ) {
    super('evalsha', []);
    // The arguments stay until the reply (a resend after a reconnect writes them again): as
    // one flat string (converting a string to a number flattens it), not the chain of pieces
    // they were added as, which costs the GC an object per piece for as long.
    void Number(callArgs.text);
    // The NOSCRIPT fallback sits on `reject`, which ioredis sets anew whenever it renews the
    // command's promise: a cluster pipeline answered MOVED, CLUSTERDOWN or a closed connection
    // (a failover) sends its commands again with fresh promises. Without this the command sent
    // again to the promoted replica, whose script cache is empty, failed with NOSCRIPT.
    let reject = this.orEval(this.reject);
    Object.defineProperty(this, 'reject', {
      configurable: true,
      get: () => reject,
      set: (r: (err: Error) => void) => (reject = this.orEval(r)),
    });
  }

  /** `reject`, but a first NOSCRIPT answer sends the command again as EVAL instead. */
  private orEval(reject: (err: Error) => void): (err: Error) => void {
    return (err: Error) => {
      if (this.retried || !err.message.startsWith('NOSCRIPT')) return reject(err);
      this.retried = true;
      this.name = 'eval';
      // The same command (its promise, its timeout) goes back in the queue.
      void this.redis.sendCommand(this);
    };
  }

  // Built when written, not kept: the socket write flattens it into a string as large as the
  // call, which would otherwise live until the reply beside the arguments.
  override toWritable(): string {
    return scriptCallText(this.script, this.callArgs, this.name === 'eval' ? 'eval' : 'evalsha', this.slotKey);
  }

  // What a cluster client routes the call by (the arguments are not kept as ioredis's).
  override getKeys(): string[] {
    return this.slotKey === undefined ? [] : [this.slotKey];
  }
}

/**
 * The command of one call, for a pipeline (its sendCommand: sent in its place among the
 * pipeline's commands, its reply or error in the pipeline's results); a NOSCRIPT answer sends
 * it again alone as EVAL, as ioredis does for a defineCommand script in a pipeline.
 */
export const scriptCommand = (redis: Redis, script: BatchScript, args: RespArgs, slotKey?: string): Command => new ScriptCommand(redis, script, args, slotKey);

/** Runs `script` with `args` (after numkeys and the slot key, if any) and returns its reply as the parser gives it: bulk strings as Buffers, integers as numbers. */
export const callScript = (redis: Redis, script: BatchScript, args: RespArgs, slotKey?: string): Promise<unknown> =>
  redis.sendCommand(new ScriptCommand(redis, script, args, slotKey)) as Promise<unknown>;
