import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../core/config/load';
import type { Webhook } from '../../core/domain/webhook';
import { admitLocally, createOutageState } from '../../core/pipeline/degraded-admission';
import { createThrottle } from '../../core/pipeline/endpoint-throttle';
import { createLocalGuards } from '../../core/pipeline/local-guards';
import { createLocalRates } from '../../core/pipeline/local-rates';
import { createOriginSlots } from '../../core/pipeline/origin-slots';
import { systemClock } from '../../core/ports/clock';
import type { Guards } from '../../core/ports/guards';
import { silentLogger } from '../../core/ports/logger';

// Rate limits while Redis does not answer (docs/RELIABILITY.md, "Redis unreachable: delivery
// degrades, it does not stop"): rate_limit.rate and a Svix endpoint's throttleRate are kept by
// each worker as its own ceiling instead of being dropped or waiting for Redis.

const webhook = (id: string, hash = 'ep-a'): Webhook => ({ id, endpoint_hash: hash, config_id: 'c' }) as Webhook;
const place = { origin: 'http://h', host: 'h' };

/** A degraded worker's admission on a clock that naps move forward. */
const degraded = (rate: number, burst: number) => {
  let now = 1_000_000;
  const clock = { now: () => now };
  const rates = createLocalRates();
  const outage = createOutageState(clock, silentLogger, 1e9, () => rates.clear());
  outage.failed(new Error('connect ECONNREFUSED'));
  const local = createLocalGuards({ perEndpoint: 100, perHost: 100 }, undefined);
  const d = {
    local,
    outage,
    slots: createOriginSlots(100),
    clock,
    recheckMs: 1e9,
    rate: { rate, burst },
    rates,
    nap: async (_hash: string, ms: number) => void (now += ms),
  };
  /** When each of `n` webhooks of `hash` went (ms after the start), each one ended at once. */
  const goes = async (n: number, hash = 'ep-a') => {
    const start = now;
    const at: number[] = [];
    for (let i = 0; i < n; i++) {
      const r = await admitLocally(d, webhook(`${hash}-${i}`, hash), place, []);
      if (r === 'ask' || r.a.kind !== 'go') throw new Error('expected a go');
      at.push(now - start);
      r.release();
      local.ended(`${hash}-${i}`);
    }
    return at;
  };
  return { goes, outage, later: (ms: number) => void (now += ms) };
};

describe('rate limits while degraded', () => {
  it('holds each endpoint to rate_limit.rate in this worker, from an empty bucket, and no more than burst saved up', async () => {
    const { goes } = degraded(5, 2);
    const at = await goes(10);
    // Empty at first: the first token after 200 ms, then one every 200 ms.
    expect(at[0]).toBeGreaterThanOrEqual(200);
    expect(at[9]).toBeGreaterThanOrEqual(2000);
    for (let i = 0; i < at.length; i++) expect(at.filter((t) => t >= at[i]! && t < at[i]! + 1000).length).toBeLessThanOrEqual(2 + 5);
    // Another endpoint has its own bucket.
    const other = await goes(1, 'ep-b');
    expect(other[0]).toBeLessThanOrEqual(200);
  });

  it('starts the buckets empty again at the next outage (nothing saved up while Redis answered)', async () => {
    const { goes, outage, later } = degraded(5, 5);
    await goes(3);
    outage.answered();
    later(60_000); // a minute with Redis: a kept bucket would have saved up its burst
    outage.failed(new Error('connect ECONNREFUSED'));
    expect((await goes(1))[0]).toBeGreaterThanOrEqual(200);
  });

  it('lets webhooks go at once without a rate limit (rate 0)', async () => {
    const { goes } = degraded(0, 10);
    expect(await goes(20)).toEqual(Array(20).fill(0));
  });

  it("keeps a Svix endpoint's throttleRate locally when Redis refuses, instead of waiting for Redis", async () => {
    const config = loadConfig({ env: {}, overrides: { 'degraded.recheck_interval': 60_000 } });
    const outage = createOutageState(systemClock, silentLogger, config.degraded.recheck_interval);
    let asked = 0;
    const guards = {
      takeToken: async () => {
        asked++;
        throw new Error('connect ECONNREFUSED 127.0.0.1:6379');
      },
    } as unknown as Guards;
    const throttle = createThrottle({
      config,
      clock: systemClock,
      guards,
      outage,
      rates: createLocalRates(),
      endpointThrottle: () => ({ endpointId: 'e1', rate: 4 }),
    });
    const t0 = Date.now();
    const at: number[] = [];
    for (let i = 0; i < 6; i++) {
      expect(await throttle(webhook(`w${i}`))).toBeUndefined(); // may go now: not parked (a park needs Redis)
      at.push(Date.now() - t0);
    }
    expect(asked).toBe(1); // degraded after the first refusal: Redis is asked again only at the recheck
    expect(outage.isDown()).toBe(true);
    // 4 a second from an empty bucket: the 6th after 1.5 s.
    expect(at[0]).toBeGreaterThanOrEqual(200);
    expect(at[5]).toBeGreaterThanOrEqual(1400);
  });
});
