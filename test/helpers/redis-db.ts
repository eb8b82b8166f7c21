import type { Redis } from 'ioredis';

/**
 * Flushes only the db asked for. A SELECT that failed (a db number out of range) leaves the
 * connection on db 0, which other suites and servers may share: never flush that by mistake.
 */
export const flushOwnDb = async (r: Redis, db: number): Promise<void> => {
  const info = String(await r.call('CLIENT', 'INFO'));
  if (!info.includes(` db=${db} `)) throw new Error(`not connected to db ${db} (${/db=\d+/.exec(info)?.[0]}): refusing to flush`);
  await r.flushdb();
};
