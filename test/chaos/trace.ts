import { keys } from '../../core/domain/keys';
import { createRedis } from '../../workers/redis/client';
import { chaosInfra } from './infra';

// The parts of the harness's receiver, client and fleet read here, described rather than
// imported: the harness calls these, so importing its types back would close a loop.
type Receiver = { byId: Map<string, { ok: number; requests?: number; log?: string[] }> };
type Client = { accepted: Map<string, unknown> };
type ChaosFleet = { baseUrl: string };

/** HOWK_CHAOS_TRACE=1: where a run's duplicates come from (the receiver logs every answer per webhook). */
export const traceDuplicates = (rx: Receiver, client: Client): void => {
  // How long after its first 2xx each duplicate came: a lease ran out (30 s), a rebalance (seconds).
  const gaps: Record<string, number> = { '<1s': 0, '1-5s': 0, '5-20s': 0, '20-40s': 0, '>40s': 0 };
  for (const e of rx.byId.values()) {
    const oks = (e.log ?? []).filter((l) => l.endsWith(':200')).map((l) => Number(l.split(':')[0]));
    for (let i = 1; i < oks.length; i++) {
      const g = oks[i]! - oks[0]!;
      gaps[g < 1000 ? '<1s' : g < 5000 ? '1-5s' : g < 20_000 ? '5-20s' : g < 40_000 ? '20-40s' : '>40s']!++;
    }
  }
  console.log('duplicates by delay after the first 2xx', JSON.stringify(gaps));
  const sample = [...rx.byId]
    .filter(([, e]) => e.ok > 1)
    .slice(0, 12)
    .map(([id, e]) => [id, client.accepted.get(id), e.log]);
  console.log('duplicate sample', JSON.stringify(sample));
};

/** What the fleet knows of webhooks that never arrived (for the report of a failed run). */
export const diagnose = async (fleet: ChaosFleet, rx: Receiver, ids: [string, string][]) => {
  const redis = createRedis(`${chaosInfra.redisUrl}/0`, {});
  try {
    return await Promise.all(
      ids.slice(0, 10).map(async ([id, kind]) => {
        const status = (await fetch(`${fleet.baseUrl}/webhooks/${id}/status`)
          .then((r) => r.json())
          .catch(() => null)) as { state?: string; attempts?: number; held?: string } | null;
        const due = await redis.zscore(keys.retries(), id).catch(() => null);
        return {
          id,
          kind,
          requests: rx.byId.get(id)?.requests ?? 0,
          state: status?.state ?? null,
          attempts: status?.attempts ?? null,
          held: status?.held ?? null,
          scheduled_in_ms: due === null ? null : Number(due) - Date.now(),
        };
      }),
    );
  } finally {
    redis.disconnect();
  }
};
