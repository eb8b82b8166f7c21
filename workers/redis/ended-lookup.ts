import type { Redis } from 'ioredis';
import { clusterKeys, keys } from '../../core/domain/keys';
import { TERMINAL_STATES, type WebhookStatus } from '../../core/domain/status';
import type { EndedLookup } from '../../core/ports/hot-state';
import { execPipeline } from './exec';
import { pipe } from './slots';
import { withScripts } from './scripts';

/**
 * EndedLookup on the status hashes writeStatuses.lua keeps: one pipelined HGET of `data` per
 * webhook, one round trip for them all. Only the state and attempt count are read of each.
 */
export const redisEndedLookup = (redis: Redis): EndedLookup => ({
  async endedAttempts(ids) {
    const out = new Map<string, number>();
    if (!ids.length) return out;
    const k = redis.isCluster ? clusterKeys : keys;
    const p = pipe(withScripts(redis));
    for (const id of ids) p.hget(k.status(id), 'data');
    const replies = (await execPipeline(p)) as (string | null)[];
    replies.forEach((data, i) => {
      if (data === null) return;
      const s = JSON.parse(data) as Partial<WebhookStatus>;
      if (s.state && TERMINAL_STATES.has(s.state) && typeof s.attempts === 'number') out.set(ids[i]!, s.attempts);
    });
    return out;
  },
});
