import type { Redis } from 'ioredis';
import type { RedisKeys } from '../../core/domain/keys';
import type { GuardGauges } from '../../core/ports/guards';
import { call, execPipeline } from './exec';
import { pipe, scanTargets } from './slots';
import type { ScriptedClient } from './scripts';

// The console's open-circuit and in-flight gauges on Redis. No index of open circuits or busy
// endpoints exists (admission and completion would pay for one on every delivery), so the
// count walks the keyspace with SCAN: at most MAX_SCAN_CALLS calls of SCAN_COUNT keys per
// pattern. A keyspace too large to walk within that answers null rather than a partial count.
// The caller caches the answer (workers/node/gauges.ts), so console tabs do not multiply it.

export const SCAN_COUNT = 1000;
export const MAX_SCAN_CALLS = 50;

/** Every key matching `pattern` (on each master of a cluster), or null when a walk did not finish within the bound. */
const scanAll = async (redis: Redis, pattern: string): Promise<string[] | null> => {
  const found = new Set<string>();
  const walk = async (node: Redis): Promise<boolean> => {
    let cursor = '0';
    for (let i = 0; i < MAX_SCAN_CALLS; i++) {
      const [next, batch] = await call(() => node.scan(cursor, 'MATCH', pattern, 'COUNT', SCAN_COUNT));
      for (const k of batch) found.add(k);
      cursor = next;
      if (cursor === '0') return true;
    }
    return false;
  };
  const walkAll = () => Promise.all(scanTargets(redis).map(walk));
  let done: boolean[];
  try {
    done = await walkAll();
  } catch (e) {
    // A cluster client replaces its node connections when it refreshes the slots (a cluster
    // still settling, a failover): a walk on a replaced one fails with "Connection is closed".
    // Once more, on the masters it knows now.
    if (!redis.isCluster) throw e;
    await new Promise((r) => setTimeout(r, 200));
    found.clear();
    done = await walkAll();
  }
  return done.every(Boolean) ? [...found] : null;
};

export const readGuardGauges = async (redis: ScriptedClient, keys: RedisKeys, now: number): Promise<GuardGauges | null> => {
  const [circuits, leases] = await Promise.all([scanAll(redis, keys.circuit('*')), scanAll(redis, keys.inflight('*'))]);
  if (!circuits || !leases) return null;
  if (!circuits.length && !leases.length) return { openCircuits: 0, inflight: 0 };
  const p = pipe(redis);
  for (const k of circuits) p.hget(k, 'state');
  // Leases that ran out but were not dropped yet (no admission since) are not in flight.
  for (const k of leases) p.zcount(k, `(${now}`, '+inf');
  const replies = await execPipeline(p);
  const openCircuits = replies.slice(0, circuits.length).filter((s) => s === 'OPEN' || s === 'HALF_OPEN').length;
  const inflight = replies.slice(circuits.length).reduce<number>((n, c) => n + Number(c ?? 0), 0);
  return { openCircuits, inflight };
};
