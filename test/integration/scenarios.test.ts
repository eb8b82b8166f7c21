import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { endpointHash } from '../../core/domain/ids';
import { waitFor } from '../helpers/env';
import { startTestFleet, type TestFleet } from '../helpers/fleet';
import { startReceiver, type Receiver, type Received } from '../helpers/receiver';

// Five delivery scenarios, on real Kafka + Redis with short timings:
// circuit threshold 3, cooldown 1.5 s, one probe per second, one success closes.
const OVERRIDES = {
  'circuit_breaker.failure_threshold': 3,
  'circuit_breaker.failure_window': 10_000,
  'circuit_breaker.recovery_timeout': 1500,
  'circuit_breaker.probe_interval': 1000,
  'circuit_breaker.success_threshold': 1,
  'retry.base_delay': 200,
  'retry.max_delay': 1000,
  'retry.max_attempts': 5,
  'retry.max_deferrals': 3,
  'delivery.timeout': 500,
};

/** A subscriber that applies each webhook-id once and acknowledges repeats without applying. */
const subscriber = () => {
  const applied = new Set<string>();
  let duplicates = 0;
  return {
    apply: (r: Received) => {
      const id = String(r.headers['webhook-id']);
      if (applied.has(id)) duplicates++;
      else applied.add(id);
    },
    effects: () => applied.size,
    duplicates: () => duplicates,
  };
};

describe('delivery scenarios (kafka + redis)', () => {
  let f: TestFleet;
  let rx: Receiver;
  let aBroken = true;
  const lost = subscriber();
  const healthy = subscriber();

  beforeAll(async () => {
    rx = await startReceiver((r, nth) => {
      const p = r.path;
      if (p.startsWith('/healthy')) {
        healthy.apply(r);
        return { status: 200 };
      }
      if (p.startsWith('/a-')) return aBroken ? { status: 503 } : { status: 200 };
      if (p === '/throttled') return nth <= 2 ? { status: 429, headers: { 'retry-after': '1' } } : { status: 200 };
      if (p === '/always-429') return { status: 429, headers: { 'retry-after': '0' } };
      if (p === '/lost') {
        // The effect is applied, but the first answer comes too late (after delivery.timeout).
        const first =
          !lost.effects() || !new Set(rx.received.filter((x) => x.path === '/lost' && x !== r).map((x) => String(x.headers['webhook-id']))).has(String(r.headers['webhook-id']));
        lost.apply(r);
        return first ? { status: 200, delayMs: 900 } : { status: 200 };
      }
      return { status: 200 };
    });
    f = await startTestFleet('kafka', { overrides: OVERRIDES });
  });
  afterAll(async () => {
    await f?.stop();
    await rx?.close();
  });

  const enqueue = async (config: string, path: string, payload: unknown, extra: Record<string, unknown> = {}) => {
    const res = await f.post(`/webhooks/${config}/enqueue`, { endpoint: rx.url(path), payload, ...extra });
    expect(res.status).toBe(202);
    return ((await res.json()) as any).webhook_id as string;
  };
  const status = async (id: string) => (await (await fetch(`${f.baseUrl}/webhooks/${id}/status`)).json()) as any;
  const to = (path: string) => rx.received.filter((r) => r.path === path);
  const endpointView = async (path: string) => (await (await fetch(`${f.baseUrl}/endpoints/${await endpointHash(rx.url(path))}`)).json()) as any;

  it('healthy: a burst to three subscribers is delivered once each, nothing retried', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 30; i++) for (const s of ['1', '2', '3']) ids.push(await enqueue(`burst-${s}`, `/healthy-${s}`, { i }));
    await waitFor(() => healthy.effects() === 90, { what: '90 deliveries' });
    await new Promise((r) => setTimeout(r, 300));
    expect(healthy.duplicates()).toBe(0);
    expect(rx.received.filter((r) => r.path.startsWith('/healthy')).every((r) => r.headers['x-webhook-attempt'] === '1')).toBe(true);
    const s = await status(ids[0]!);
    expect(s.history).toHaveLength(1);
  });

  it("failure then recovery: A's circuit opens, A is not hammered, B/C flow; a probe after the cooldown closes it and parked webhooks drain", async () => {
    aBroken = true;
    const t0 = Date.now();
    const aIds: string[] = [];
    const bIds: string[] = [];
    for (let i = 0; i < 10; i++) {
      aIds.push(await enqueue(`a-cfg-${i}`, '/a-recover', { i }, { max_attempts: 20 }));
      bIds.push(await enqueue(`b-cfg-${i}`, '/b', { i }));
    }
    // B keeps flowing: all delivered quickly despite A failing.
    await waitFor(() => to('/b').length >= 10, { timeoutMs: 5000, what: 'B deliveries' });
    expect(Date.now() - t0).toBeLessThan(5000);
    await waitFor(async () => (await endpointView('/a-recover')).circuit.opened_count >= 1, { timeoutMs: 10_000, what: "A's circuit to open" });
    const openedAt = Date.now();
    // Parked, not hammered: for 3 s after opening, at most one probe per second reaches A.
    const before = to('/a-recover').length;
    await new Promise((r) => setTimeout(r, 3000));
    const during = to('/a-recover').length - before;
    expect(during).toBeLessThanOrEqual(3);
    const probes = to('/a-recover').filter((r) => r.at > openedAt);
    for (let i = 1; i < probes.length; i++) expect(probes[i]!.at - probes[i - 1]!.at).toBeGreaterThanOrEqual(900);
    // Repair A: only a probe can close the circuit; then everything parked drains.
    aBroken = false;
    await waitFor(async () => (await endpointView('/a-recover')).circuit.state === 'CLOSED', { timeoutMs: 10_000, what: 'circuit closed by a probe' });
    await waitFor(async () => (await Promise.all(aIds.map(status))).every((s) => s.state === 'delivered'), { timeoutMs: 20_000, what: 'parked A webhooks delivered' });
    const dead = f.records('deadletter').filter((r) => aIds.includes(JSON.parse(r.value!).webhook_id));
    expect(dead).toHaveLength(0);
    // Parking spent no attempts: far fewer attempts than the wall time would have allowed.
    const attempts = (await Promise.all(aIds.map(status))).reduce((n, s) => n + s.attempts, 0);
    expect(attempts).toBeLessThan(aIds.length * 5);
  });

  it('failure: deliveries that spend their budget dead-letter with a reason', async () => {
    aBroken = true;
    const id = await enqueue('a-dl', '/a-dl', { x: 1 }, { max_attempts: 2 });
    await waitFor(async () => (await status(id)).state === 'exhausted', { timeoutMs: 15_000, what: 'exhausted' });
    await waitFor(() => f.records('deadletter').some((r) => JSON.parse(r.value!).webhook_id === id), { what: 'dead letter record' });
    const dl = JSON.parse(f.records('deadletter').find((r) => JSON.parse(r.value!).webhook_id === id)!.value!);
    expect(dl.reason_type).toBe('exhausted');
    expect(dl.last_status_code).toBe(503);
  });

  it('rate limit: 429 + Retry-After is retried exactly then, counts no failure; the deferral budget ends an endless 429 loop', async () => {
    const id = await enqueue('throttled', '/throttled', { t: 1 }, { max_attempts: 1 });
    await waitFor(async () => (await status(id)).state === 'delivered', { timeoutMs: 10_000, what: 'delivery after two 429s' });
    const got = to('/throttled');
    expect(got).toHaveLength(3);
    for (let i = 1; i < 3; i++) {
      expect(got[i]!.at - got[i - 1]!.at).toBeGreaterThanOrEqual(1000);
      expect(got[i]!.at - got[i - 1]!.at).toBeLessThan(1800);
    }
    const v = await endpointView('/throttled');
    expect(v.circuit.state).toBe('CLOSED');
    expect(v.circuit.failures).toBe(0);
    expect((await status(id)).history.map((h: any) => h.outcome)).toEqual(['deferred', 'deferred', 'delivered']);
    // Endless 429: max_deferrals (3) deferrals, then ordinary attempts until max_attempts (2).
    const loop = await enqueue('always-429', '/always-429', { t: 2 }, { max_attempts: 2 });
    await waitFor(async () => (await status(loop)).state === 'exhausted', { timeoutMs: 15_000, what: 'the 429 loop to end' });
    expect(to('/always-429')).toHaveLength(3 + 2);
  });

  it('lost response: the retry reaches a deduping receiver; effects stay one per webhook while duplicates climb', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push(await enqueue(`lost-${i}`, '/lost', { i }));
    await waitFor(async () => (await Promise.all(ids.map(status))).every((s) => s.state === 'delivered'), { timeoutMs: 15_000, what: 'lost-response deliveries' });
    expect(lost.effects()).toBe(5);
    expect(lost.duplicates()).toBeGreaterThanOrEqual(5);
    const s = await status(ids[0]!);
    expect(s.history[0].outcome).toBe('retry');
    expect(s.history[0].error).toMatch(/timeout/);
  });
});
