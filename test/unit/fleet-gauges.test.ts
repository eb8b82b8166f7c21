import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Log, PartitionLag } from '../../core/ports/log';
import { createFleetGauges, GAUGE_CACHE_MS } from '../../workers/node/gauges';
import { testConfig } from '../helpers/fleet';

// GET /stats/gauges' reads: shared by the consoles that poll together, and null (never a
// guess) when a read fails or hangs.

const config = testConfig('memory');
const logWith = (lag: (group: string) => Promise<PartitionLag[]>): Log => ({ admin: { lag } }) as unknown as Log;
const parts = (lag: (group: string) => Promise<PartitionLag[]>, gauges = async () => ({ openCircuits: 2, inflight: 7 })) => ({
  hot: { retryCount: async () => 4 },
  config,
  logStore: logWith(lag),
  guards: { gauges },
  now: () => 0,
});

describe('console gauges (createFleetGauges)', () => {
  afterEach(() => vi.useRealTimers());

  it('reads the lag and the guards once for many requests within the cache time, again after it', async () => {
    vi.useFakeTimers();
    const asked: string[] = [];
    const read = createFleetGauges(parts(async (g) => (asked.push(g), [{ topic: 't', partition: 0, lag: g.endsWith('-slow') ? 3 : 9 }])));
    const all = await Promise.all(Array.from({ length: 20 }, () => read()));
    expect(all.every((g) => JSON.stringify(g) === JSON.stringify(all[0]))).toBe(true);
    expect(all[0]).toEqual({ retry_queue: 4, in_flight: 7, slow_lane: 3, consumer_lag: 9, open_circuits: 2 });
    expect(asked).toEqual([config.kafka.consumer_group, `${config.kafka.consumer_group}-slow`]);
    vi.advanceTimersByTime(GAUGE_CACHE_MS);
    await read();
    expect(asked).toHaveLength(4);
  });

  it('answers null for a read that fails or hangs, and the others still', async () => {
    vi.useFakeTimers();
    const read = createFleetGauges(
      parts(
        (g) => (g.endsWith('-slow') ? Promise.reject(new Error('broker down')) : new Promise<PartitionLag[]>(() => {})),
        () => Promise.reject(new Error('redis down')),
      ),
    );
    const pending = read();
    await vi.advanceTimersByTimeAsync(2000);
    expect(await pending).toEqual({ retry_queue: 4, in_flight: null, slow_lane: null, consumer_lag: null, open_circuits: null });
  });

  it('says null for in flight when no endpoint limit takes leases', async () => {
    const off = testConfig('memory', { 'concurrency.max_inflight_per_endpoint': 0 });
    const read = createFleetGauges({ ...parts(async () => []), config: off });
    expect(await read()).toMatchObject({ in_flight: null, open_circuits: 2, consumer_lag: 0 });
  });
});
