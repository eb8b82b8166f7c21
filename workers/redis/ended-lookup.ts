import type { ChainableCommander, Redis } from 'ioredis';
import { clusterKeys, keys, scriptPrefix } from '../../core/domain/keys';
import type { EndedLookup, SentMark } from '../../core/ports/hot-state';
import { call, execPipeline } from './exec';
import { RespArgs } from './resp';
import { createRidingMarks, type RidingMarks } from './riding-marks';
import { batchScript, callScript } from './script-call';
import { groupBySlot, pipe } from './slots';
import { BATCH_SCRIPTS, forCluster, withScripts } from './scripts';

const READ_ENDED = batchScript(BATCH_SCRIPTS.readEnded);
const CLUSTER_READ_ENDED = batchScript(forCluster(BATCH_SCRIPTS.readEnded));
const WRITE_MARKS = batchScript(BATCH_SCRIPTS.writeMarks);

/** The status hash's field holding the last sent mark: `<pass>:<status>:<at ms>:<duration ms>`. */
export const SENT_FIELD = 'sent';

const encodeMark = (m: SentMark): string => `${m.pass}:${m.status}:${m.at}:${Math.round(m.durationMs)}`;
const decodeMark = (s: string | null): SentMark | undefined => {
  if (!s) return undefined;
  const [pass, status, at, durationMs] = s.split(':').map(Number);
  return [pass, status, at, durationMs].every((n) => Number.isFinite(n)) ? { pass: pass!, status: status!, at: at!, durationMs: durationMs! } : undefined;
};

type Marked = { id: string; mark: SentMark };

/**
 * EndedLookup on the status hashes writeStatuses.lua keeps: one readEnded.lua call for the
 * batch (on a cluster one per slot, in one round trip), which reads each status's `data` and
 * `sent` (the sent mark) where they are and answers only the ended attempt count and the mark.
 * A sent mark is a field of the same hash (no key of its own to expire: it lives and goes with
 * the status); a hash that does not exist yet (the api's status write failed) is given the
 * status's TTL. On a single Redis the marks ride the next completion call of the connection
 * (`riding`, given to RedisGuards: workers/redis/riding-marks.ts); on a cluster, whose guard
 * calls are per endpoint slot, they leave on their own.
 */
export const redisEndedLookup = (redis: Redis, statusTtlMs = 7 * 24 * 3600_000): EndedLookup & { riding?: RidingMarks } => {
  const k = redis.isCluster ? clusterKeys : keys;
  const prefix = redis.isCluster ? `${scriptPrefix(k.status(''))}{` : k.status('');
  /** The marks' arguments: their count, then (when any) the status key prefix, its TTL, and two per mark. */
  const writeSection = (w: RespArgs, marks: readonly Marked[]): void => {
    w.num(marks.length);
    if (!marks.length) return;
    w.str(prefix).num(statusTtlMs);
    for (const { id, mark } of marks) w.str(id).str(encodeMark(mark));
  };
  /** On one Redis, marks no completion took: one writeMarks.lua call for them all. */
  const alone = (marks: readonly Marked[]): Promise<unknown> => {
    const w = new RespArgs();
    writeSection(w, marks);
    return callScript(redis, WRITE_MARKS, w);
  };
  /** On a cluster (a slot per webhook): the field and the status's TTL, per mark. */
  const writeMarkApart = (p: ChainableCommander, { id, mark }: Marked): void => {
    const key = k.status(id);
    p.hset(key, SENT_FIELD, encodeMark(mark));
    // The status's own TTL (its writes set the same): a hash made by this mark alone expires too.
    p.pexpire(key, statusTtlMs);
  };
  const riding = redis.isCluster ? undefined : createRidingMarks<Marked>(alone, writeSection);
  const read = (ids: readonly string[], slotKey?: string): Promise<unknown[]> => {
    const args = new RespArgs().str(prefix);
    for (const id of ids) args.str(id);
    return call(() => callScript(redis, slotKey === undefined ? READ_ENDED : CLUSTER_READ_ENDED, args, slotKey) as Promise<unknown[]>);
  };
  /** On a cluster one call per slot of the ids; each part's replies in the order of its ids. */
  const readAll = async (ids: readonly string[]): Promise<{ ids: readonly string[]; reply: unknown[] }[]> => {
    if (!redis.isCluster) return [{ ids, reply: await read(ids) }];
    return Promise.all(groupBySlot(ids, (id) => k.status(id)).map(async (g) => ({ ids: g, reply: await read(g, k.status(g[0]!)) })));
  };
  const lookup = async (ids: readonly string[]) => {
    const ended = new Map<string, number>();
    const sent = new Map<string, SentMark>();
    if (!ids.length) return { ended, sent };
    for (const part of await readAll(ids))
      part.ids.forEach((id, i) => {
        // Bulk replies of a hand-encoded call come as Buffers.
        const attempts = String(part.reply[2 * i] ?? '');
        if (attempts) ended.set(id, Number(attempts));
        const m = decodeMark(String(part.reply[2 * i + 1] ?? ''));
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
      for (const m of marks) writeMarkApart(p, m);
      await execPipeline(p);
    },
    ...(riding ? { riding } : {}),
  };
};
