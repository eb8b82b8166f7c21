/**
 * Redis databases for tests: never pick a db number by hand, take one here.
 *
 *   const db = useRedisDb();                  // top of a test file (or describe): a db of its own, taken in
 *                                             // beforeAll (flushed), released in afterAll; read it with db()
 *   createRedis(requireEnv('REDIS_URL'), { db: db() })   // inside hooks and tests, never at module level
 *   redisUrlOf(db())                          // REDIS_URL / HOWK_REDIS_URL for a child process
 *   startTestFleet('kafka')                   // without redisDb, a fleet takes a db itself (f.redisDb) and
 *                                             // releases it in stop(); pass { redisDb: db() } to share one
 *   takeRedisDb() / releaseRedisDb(n)         // anything else
 *
 * A db is leased in db 0 of the same server (`howk:test:db-lease:<n>`, SET NX PX, renewed in the
 * background), so test files, vitest workers and whole test runs sharing the server never hold
 * the same db; a crashed run's leases expire after LEASE_TTL_MS. Tests use dbs 1..63 (never 0), except
 * the ones the benchmarks and the fuzzer flush by default (RESERVED_DBS).
 */
import { hostname } from 'node:os';
import { threadId } from 'node:worker_threads';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';
import { createRedis } from '../../workers/redis/client';
import { requireEnv } from './env';

/**
 * Flushes only the db asked for. A SELECT that failed (a db number out of range) leaves the
 * connection on db 0, which other suites and servers may share: never flush that by mistake.
 */
export const flushOwnDb = async (r: Redis, db: number): Promise<void> => {
  const info = String(await r.call('CLIENT', 'INFO'));
  if (!info.includes(` db=${db} `)) throw new Error(`not connected to db ${db} (${/db=\d+/.exec(info)?.[0]}): refusing to flush`);
  await r.flushdb();
};

/** The test Redis starts with 64 databases (scripts/infra/redis.sh); db 0 holds the leases. */
export const FIRST_TEST_DB = 1;
export const LAST_TEST_DB = 63;
/**
 * Default dbs of scripts/fuzz.mjs (8) and test/bench (9, 39, 56, 59): run by hand against the same
 * Redis, they FLUSHDB their db without taking a lease, so no test is given one of these.
 */
export const RESERVED_DBS: readonly number[] = [8, 9, 39, 56, 59];
/** The dbs the allocator hands out. */
export const TEST_DBS: readonly number[] = Array.from({ length: LAST_TEST_DB - FIRST_TEST_DB + 1 }, (_, i) => FIRST_TEST_DB + i).filter((n) => !RESERVED_DBS.includes(n));
export const LEASE_PREFIX = 'howk:test:db-lease:';
/** How long a crashed holder keeps a db; renewals every RENEW_MS keep a live one far from it. */
export const LEASE_TTL_MS = 60_000;
const RENEW_MS = 5_000;

export type RedisDbAllocatorOptions = {
  url: string;
  /** Key prefix of the leases (the allocator's own test uses a private one). */
  prefix?: string;
  ttlMs?: number;
  renewMs?: number;
  /** How long take() waits for a free db before it throws. */
  waitMs?: number;
  /** FLUSHDB a db when it is taken (what tests want; the allocator's own test turns it off). */
  flush?: boolean;
};

export type RedisDbAllocator = {
  take(): Promise<number>;
  /** Throws when the lease was lost while held (it expired and someone else may have flushed the db). */
  release(db: number): Promise<void>;
  close(): Promise<void>;
};

export const redisUrlOf = (db: number, url = requireEnv('REDIS_URL')): string => {
  const u = new URL(url);
  u.pathname = `/${db}`;
  return u.toString();
};

export const createRedisDbAllocator = (opts: RedisDbAllocatorOptions): RedisDbAllocator => {
  const prefix = opts.prefix ?? LEASE_PREFIX;
  const ttlMs = opts.ttlMs ?? LEASE_TTL_MS;
  const renewMs = opts.renewMs ?? RENEW_MS;
  const waitMs = opts.waitMs ?? 100_000;
  const owner = `${hostname()}:${process.pid}:${threadId}:${Math.random().toString(36).slice(2, 10)}`;
  const held = new Set<number>();
  const lost = new Set<number>();
  let conn: Redis | undefined;
  let timer: ReturnType<typeof setInterval> | undefined;
  // WATCH/MULTI state is per connection: compare-and-set operations take turns on it.
  let turn: Promise<unknown> = Promise.resolve();
  const serial = <T>(fn: () => Promise<T>): Promise<T> => {
    const run = turn.then(fn, fn);
    turn = run.catch(() => {});
    return run;
  };
  const redis = () => (conn ??= createRedis(opts.url, { db: 0, connectionName: 'howk-test-db-allocator' }));
  const key = (db: number) => `${prefix}${db}`;

  /** Runs `op` only while the lease is still ours; false when it is not. */
  const ifOurs = (db: number, op: (m: ReturnType<Redis['multi']>) => void) =>
    serial(async () => {
      const r = redis();
      await r.watch(key(db));
      if ((await r.get(key(db))) !== owner) {
        await r.unwatch();
        return false;
      }
      const m = r.multi();
      op(m);
      return (await m.exec()) !== null;
    });

  const renewAll = async () => {
    for (const db of [...held]) {
      const ok = await ifOurs(db, (m) => m.pexpire(key(db), ttlMs)).catch(() => true);
      if (!ok) {
        held.delete(db);
        lost.add(db);
        console.error(`[redis-db] the lease on Redis db ${db} expired while held (${owner}): another test may be using it`);
      }
    }
  };

  const tryOnce = async (): Promise<number | undefined> => {
    const n = TEST_DBS.length;
    const start = Math.floor(Math.random() * n);
    for (let i = 0; i < n; i++) {
      const db = TEST_DBS[(start + i) % n]!;
      if ((await redis().set(key(db), owner, 'PX', ttlMs, 'NX')) === 'OK') return db;
    }
    return undefined;
  };

  return {
    take: async () => {
      const end = Date.now() + waitMs;
      for (;;) {
        const db = await tryOnce();
        if (db !== undefined) {
          held.add(db);
          timer ??= setInterval(() => void renewAll(), renewMs).unref();
          if (opts.flush ?? true) {
            const r = createRedis(opts.url, { db });
            try {
              await flushOwnDb(r, db);
            } finally {
              r.disconnect();
            }
          }
          return db;
        }
        if (Date.now() > end) throw new Error(`no free Redis test db (${TEST_DBS.length} in ${FIRST_TEST_DB}..${LAST_TEST_DB}) within ${waitMs} ms: all are leased (${prefix}*)`);
        await new Promise((r) => setTimeout(r, 100 + Math.random() * 200));
      }
    },
    release: async (db) => {
      if (lost.delete(db)) throw new Error(`the lease on Redis db ${db} expired while this test held it: another test may have used or flushed the db`);
      if (!held.delete(db)) return;
      if (!(await ifOurs(db, (m) => m.del(key(db))))) throw new Error(`the lease on Redis db ${db} expired while this test held it: another test may have used or flushed the db`);
      if (held.size === 0) {
        if (timer) clearInterval(timer);
        timer = undefined;
        await serial(async () => {
          conn?.disconnect();
          conn = undefined;
        });
      }
    },
    close: async () => {
      if (timer) clearInterval(timer);
      timer = undefined;
      await turn;
      conn?.disconnect();
      conn = undefined;
    },
  };
};

let shared: RedisDbAllocator | undefined;
const allocator = () => (shared ??= createRedisDbAllocator({ url: requireEnv('REDIS_URL') }));

/** A Redis db (1..63, flushed) that no other test holds until releaseRedisDb. */
export const takeRedisDb = (): Promise<number> => allocator().take();
export const releaseRedisDb = (db: number): Promise<void> => allocator().release(db);

/** Takes a db in a beforeAll of the enclosing file or describe and releases it in its afterAll. */
export const useRedisDb = (): (() => number) => {
  let db: number | undefined;
  beforeAll(async () => {
    db = await takeRedisDb();
  });
  afterAll(async () => {
    if (db !== undefined) await releaseRedisDb(db);
    db = undefined;
  });
  return () => {
    if (db === undefined) throw new Error('useRedisDb(): the db is known only inside hooks and tests (after its beforeAll)');
    return db;
  };
};
