import type { Redis } from 'ioredis';
import { createBatcher } from '../../core/domain/batcher';
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
  let refresher: ReturnType<typeof setInterval> | undefined;

  /** One pipeline for what waited together, the last value of each id; one out at a time, so they land in order. */
  const writes = createBatcher<[string, string | null], void>({
    start: { lingerMs: flushMs },
    run: async (entries) => {
      const batch = new Map(entries);
      const p = scriptedPipeline(client);
      for (const [id, v] of batch) p.howk_mirrorKey(keys.apiKeys(), id, v ?? '', v !== null && revoked(id, v) ? 1 : 0);
      try {
        await execPipeline(p);
      } catch (e) {
        // Written again at the next refresh.
        o.log?.warn('API key mirror not written', { keys: batch.size, error: errorMessage(e) });
      }
    },
  });
  const write = (id: string, value: string | null) => void writes.add([id, value]).catch(() => {});

  const flush = (): Promise<void> => {
    writes.flush();
    return writes.idle();
  };

  return {
    apply(id, value) {
      if (value === null) latest.delete(id);
      else latest.set(id, value);
      write(id, value);
      refresher ??= setInterval(() => {
        for (const [k, v] of latest) write(k, v);
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
