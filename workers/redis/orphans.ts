import type { RedisKeys } from '../../core/domain/keys';
import { shardOf } from '../../core/domain/retry-shards';
import type { WebhookStatus } from '../../core/domain/status';
import type { HotTtls } from '../../core/ports/hot-state';
import type { OrphanRepair, RestoreItem } from '../../core/ports/recovery';
import { execPipeline } from './exec';
import type { RedisRetrySchedule } from './retry-schedule';
import type { ScriptedClient } from './scripts';
import { pipe } from './slots';

// The orphan sweep's two calls on Redis (core/reconcile/orphans.ts), one round trip each
// (on a cluster one pipeline per slot).

export class RedisOrphans implements OrphanRepair {
  constructor(
    private readonly redis: ScriptedClient,
    private readonly ttls: HotTtls,
    private readonly k: RedisKeys,
    private readonly schedule: RedisRetrySchedule,
  ) {}

  /** Per webhook: its shard's entry (a lease is the same entry, re-scored), the pre-shard schedule's, its in-flight record and its status. */
  async unscheduled(items: { id: string; endpointHash: string }[], now: number): Promise<Map<string, WebhookStatus | null>> {
    const out = new Map<string, WebhookStatus | null>();
    if (!items.length) return out;
    const p = pipe(this.redis);
    for (const { id, endpointHash } of items) {
      p.zscore(this.k.retryShard(shardOf(id, this.schedule.shards)), id);
      p.zscore(this.k.retries(), id);
      p.zscore(this.k.inflight(endpointHash), id);
      p.hget(this.k.status(id), 'data');
    }
    const r = (await execPipeline(p)) as (string | null)[];
    items.forEach(({ id }, i) => {
      const [entry, legacy, inflight, data] = r.slice(i * 4, i * 4 + 4);
      // An in-flight record past its lease is a dead worker's: it carries nothing.
      if (entry !== null || legacy !== null || (inflight !== null && Number(inflight) > now)) return;
      out.set(id, data ? (JSON.parse(data) as WebhookStatus) : null);
    });
    return out;
  }

  /** The status where none as new is stored (restoreStatus-1.lua), then the retry unless scheduled (restoreRetry-4.lua). */
  async reschedule(items: RestoreItem[]): Promise<string[]> {
    const p = pipe(this.redis);
    const ids: string[] = [];
    for (const { status, retry } of items) {
      if (!retry) continue;
      p.howk_restoreStatus(this.k.status(status.webhook_id), JSON.stringify(status), status.updated_at_ns, this.ttls.status_ttl);
      const a = this.schedule.restoreArgs(status.webhook_id, retry.dueAt, retry.data, this.ttls.retry_data_ttl);
      p.howk_restoreRetry(...a.keys, ...a.args);
      ids.push(status.webhook_id);
    }
    if (!ids.length) return [];
    const r = await execPipeline(p);
    return ids.filter((_, i) => Number(r[i * 2 + 1]) === 1);
  }
}
