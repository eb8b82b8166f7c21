import type { ChainableCommander, Redis } from 'ioredis';
import { clusterKeys, keys } from '../../core/domain/keys';
import { TERMINAL_STATES, type WebhookStatus } from '../../core/domain/status';
import type { EndedLookup, SentMark } from '../../core/ports/hot-state';
import { execPipeline } from './exec';
import { createRidingMarks, type RidingMarks } from './riding-marks';
import { pipe } from './slots';
import { withScripts } from './scripts';

/** The status hash's field holding the last sent mark: `<pass>:<status>:<at ms>:<duration ms>`. */
export const SENT_FIELD = 'sent';

const encodeMark = (m: SentMark): string => `${m.pass}:${m.status}:${m.at}:${Math.round(m.durationMs)}`;
const decodeMark = (s: string | null): SentMark | undefined => {
  if (!s) return undefined;
  const [pass, status, at, durationMs] = s.split(':').map(Number);
  return [pass, status, at, durationMs].every((n) => Number.isFinite(n)) ? { pass: pass!, status: status!, at: at!, durationMs: durationMs! } : undefined;
};

const endedOf = (data: string | null): number | undefined => {
  if (data === null) return undefined;
  const s = JSON.parse(data) as Partial<WebhookStatus>;
  return s.state && TERMINAL_STATES.has(s.state) && typeof s.attempts === 'number' ? s.attempts : undefined;
};

type Marked = { id: string; mark: SentMark };

/**
 * EndedLookup on the status hashes writeStatuses.lua keeps: one pipelined HMGET of `data` (the
 * status: only its state and attempt count are read) and `sent` (the sent mark) per webhook,
 * one round trip for them all. A sent mark is a field of the same hash (no key of its own to
 * expire: it lives and goes with the status); a hash that does not exist yet (the api's status
 * write failed) is given the status's TTL. On a single Redis the marks ride the next guards
 * call of the connection (`riding`, given to RedisGuards: workers/redis/riding-marks.ts); on a
 * cluster, whose guard calls are per endpoint slot, they leave on their own.
 */
export const redisEndedLookup = (redis: Redis, statusTtlMs = 7 * 24 * 3600_000): EndedLookup & { riding?: RidingMarks } => {
  const k = redis.isCluster ? clusterKeys : keys;
  const writeMark = (p: ChainableCommander, { id, mark }: Marked): number => {
    const key = k.status(id);
    p.hset(key, SENT_FIELD, encodeMark(mark));
    // The status's own TTL (its writes set the same): a hash made by this mark alone expires too.
    p.pexpire(key, statusTtlMs);
    return 2;
  };
  const riding = redis.isCluster ? undefined : createRidingMarks<Marked>(() => redis.pipeline(), writeMark);
  const lookup = async (ids: readonly string[]) => {
    const ended = new Map<string, number>();
    const sent = new Map<string, SentMark>();
    if (!ids.length) return { ended, sent };
    const p = pipe(withScripts(redis));
    for (const id of ids) p.hmget(k.status(id), 'data', SENT_FIELD);
    const replies = (await execPipeline(p)) as [string | null, string | null][];
    replies.forEach(([data, mark], i) => {
      const id = ids[i]!;
      const attempts = endedOf(data);
      if (attempts !== undefined) ended.set(id, attempts);
      const m = decodeMark(mark);
      if (m) sent.set(id, m);
    });
    return { ended, sent };
  };
  return {
    endedAttempts: async (ids) => (await lookup(ids)).ended,
    lookup,
    async markSent(marks) {
      if (!marks.length) return;
      if (riding) return riding.add(marks);
      const p = pipe(withScripts(redis));
      for (const m of marks) writeMark(p, m);
      await execPipeline(p);
    },
    ...(riding ? { riding } : {}),
  };
};
