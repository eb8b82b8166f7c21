import type { Redis } from 'ioredis';
import { isTaggedKv, planLegacyKv, type KvOwners } from '../../core/domain/legacy-kv';
import type { KvScope } from '../../core/domain/keys';
import { scanTargets } from './slots';

// Copies Lua kv entries from the untagged shape (`kv:<owner>:<key>`) to keys.kv's, with their
// TTLs, for the owners named (core/domain/legacy-kv.ts says which keys qualify). Without
// `apply` it only reports. It never overwrites an entry a script already wrote in the new
// shape, and deletes an old key only with `deleteOld`, once its value is in place.

export type KvMigrationReport = {
  /** Nothing was written: `copied` counts what would be. */
  dry_run: boolean;
  scanned: number;
  copied: number;
  /** The new key already existed (written by a script since the upgrade): left as it is. */
  kept_newer: number;
  deleted_old: number;
  ambiguous: number;
  /** The first ambiguous keys, for the operator to settle by hand. */
  ambiguous_sample: { key: string; candidates: KvScope[] }[];
  unowned: number;
};

const SAMPLE = 100;

export const migrateLegacyKv = async (redis: Redis, owners: KvOwners, opts: { apply: boolean; deleteOld: boolean }): Promise<KvMigrationReport> => {
  const report: KvMigrationReport = { dry_run: !opts.apply, scanned: 0, copied: 0, kept_newer: 0, deleted_old: 0, ambiguous: 0, ambiguous_sample: [], unowned: 0 };
  // SCAN walks one node: every master of a cluster in turn.
  for (const node of scanTargets(redis)) await migrateOn(node, redis, owners, opts, report);
  return report;
};

const migrateOn = async (node: Redis, redis: Redis, owners: KvOwners, opts: { apply: boolean; deleteOld: boolean }, report: KvMigrationReport): Promise<void> => {
  let cursor = '0';
  do {
    const [next, found] = await node.scan(cursor, 'MATCH', 'kv:*', 'COUNT', 500);
    cursor = next;
    for (const old of found) {
      if (isTaggedKv(old)) continue;
      report.scanned++;
      const plan = planLegacyKv(old, owners);
      if (plan.kind === 'unowned') report.unowned++;
      else if (plan.kind === 'ambiguous') {
        report.ambiguous++;
        if (report.ambiguous_sample.length < SAMPLE) report.ambiguous_sample.push({ key: old, candidates: plan.candidates });
      } else if (!opts.apply) report.copied++;
      else {
        const [value, ttl] = await Promise.all([redis.get(old), redis.pttl(old)]);
        if (value === null || ttl === -2) continue; // expired meanwhile
        const set = ttl > 0 ? await redis.set(plan.to, value, 'PX', ttl, 'NX') : await redis.set(plan.to, value, 'NX');
        if (set === 'OK') report.copied++;
        else report.kept_newer++;
        if (opts.deleteOld) report.deleted_old += await redis.del(old);
      }
    }
  } while (cursor !== '0');
};
