import type { Redis } from 'ioredis';
import { keys } from '../../core/domain/keys';
import { errorMessage } from '../../core/errors/errors';
import type { Logger } from '../../core/ports/logger';
import { decodeApiKey } from '../../core/records/api-key';
import { execPipeline } from './exec';
import { scriptedPipeline, withScripts } from './scripts';

// The edge's view of the API-key table: howk-api's replica of the keys topic writes every
// record it applies (create, revoke) into one Redis hash, `howk:keys`, which the edge reads
// through howk-bridge (edge/keys.ts). Writes are batched (one pipeline per `flushMs`), and
// the whole table is written again every `refreshMs`, so a Redis that lost its data (and
// was rebuilt) has the table back within that time. mirrorKey.lua keeps a revoked record
// against a replica that replays older ones.

export type KeyMirror = {
  /** A record as the replica applied it (null: a tombstone). */
  apply(id: string, value: string | null): void;
  /** Writes what is waiting now. */
  flush(): Promise<void>;
  stop(): Promise<void>;
};

export type KeyMirrorOptions = { flushMs?: number; refreshMs?: number; log?: Logger };

const revoked = (id: string, value: string): boolean => {
  try {
    return (decodeApiKey(id, value)?.revoked_at ?? null) !== null;
  } catch {
    return false;
  }
};

export const createKeyMirror = (redis: Redis, o: KeyMirrorOptions = {}): KeyMirror => {
  const client = withScripts(redis);
  const flushMs = o.flushMs ?? 50;
  const refreshMs = o.refreshMs ?? 60_000;
  const latest = new Map<string, string>();
  let waiting = new Map<string, string | null>();
  let timer: ReturnType<typeof setTimeout> | undefined;
  let refresher: ReturnType<typeof setInterval> | undefined;
  let running: Promise<void> = Promise.resolve();

  const write = async (batch: Map<string, string | null>) => {
    if (!batch.size) return;
    const p = scriptedPipeline(client);
    for (const [id, v] of batch) p.howk_mirrorKey(keys.apiKeys(), id, v ?? '', v !== null && revoked(id, v) ? 1 : 0);
    try {
      await execPipeline(p);
    } catch (e) {
      // Written again at the next refresh.
      o.log?.warn('API key mirror not written', { keys: batch.size, error: errorMessage(e) });
    }
  };

  const flush = (): Promise<void> => {
    if (timer) clearTimeout(timer);
    timer = undefined;
    const batch = waiting;
    waiting = new Map();
    running = running.then(() => write(batch));
    return running;
  };

  return {
    apply(id, value) {
      if (value === null) latest.delete(id);
      else latest.set(id, value);
      waiting.set(id, value);
      timer ??= setTimeout(() => void flush(), flushMs);
      refresher ??= setInterval(() => {
        running = running.then(() => write(new Map(latest)));
      }, refreshMs);
      refresher.unref?.();
    },
    flush,
    async stop() {
      if (refresher) clearInterval(refresher);
      await flush();
    },
  };
};
