import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestFleet, type TestFleet } from '../helpers/fleet';

// GET /webhooks/events (server-sent events from the one shared poll) and GET /stats/timeline,
// on an api with the in-memory adapters over real HTTP on loopback.

type Reader = { text: () => string; until: (re: RegExp) => Promise<string>; close: () => void };

const openStream = async (url: string): Promise<{ res: Response; r: Reader }> => {
  const ac = new AbortController();
  const res = await fetch(url, { signal: ac.signal });
  let buf = '';
  const waiters: (() => void)[] = [];
  if (res.ok && res.body) {
    const dec = new TextDecoder();
    void (async () => {
      try {
        for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
          buf += dec.decode(chunk);
          for (const w of waiters.splice(0)) w();
        }
      } catch {
        /* aborted */
      }
    })();
  }
  const until = async (re: RegExp) => {
    const deadline = Date.now() + 10_000;
    while (!re.test(buf)) {
      if (Date.now() > deadline) throw new Error(`stream never matched ${re}: ${buf}`);
      await new Promise<void>((ok) => {
        waiters.push(ok);
        setTimeout(ok, 200);
      });
    }
    return buf;
  };
  return { res, r: { text: () => buf, until, close: () => ac.abort() } };
};

describe('live updates and the timeline', () => {
  let f: TestFleet;
  beforeAll(async () => {
    f = await startTestFleet('memory', {
      roles: { api: true, worker: false, scheduler: false },
      overrides: { 'api.events.poll_interval': 50, 'api.events.heartbeat': 300, 'api.events.max_subscribers': 2 },
    });
  });
  afterAll(() => f?.stop());

  const enqueue = async (config: string, n = 1) => {
    const ids: string[] = [];
    for (let i = 0; i < n; i++) {
      const r = await f.post(`/webhooks/${config}/enqueue`, { endpoint: 'http://127.0.0.1:9/x', payload: { i } });
      expect(r.status).toBe(202);
      ids.push(((await r.json()) as { webhook_id: string }).webhook_id);
    }
    return ids;
  };

  it("streams a config's new webhooks as `event: webhook`, not another config's, with heartbeats between", async () => {
    const { res, r } = await openStream(`${f.baseUrl}/webhooks/events?config_id=live-a`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    await r.until(/: connected/);
    await new Promise((ok) => setTimeout(ok, 150)); // the baseline poll
    const [other] = await enqueue('live-b');
    const [mine] = await enqueue('live-a');
    const text = await r.until(new RegExp(`"webhook_id":"${mine}"`));
    expect(text).toMatch(/event: webhook\ndata: \{.*"config_id":"live-a".*"state":"pending"/);
    expect(text).not.toContain(other!);
    await r.until(/: heartbeat/);
    r.close();
  });

  it('answers 503 JSON over the subscriber limit and frees a slot when a client leaves', async () => {
    const a = await openStream(`${f.baseUrl}/webhooks/events?config_id=live-c`);
    const b = await openStream(`${f.baseUrl}/webhooks/events?config_id=live-c&state=delivered`);
    const over = await fetch(`${f.baseUrl}/webhooks/events?config_id=live-c`);
    expect(over.status).toBe(503);
    expect(((await over.json()) as { error: { code: string } }).error.code).toBe('too_many_streams');
    a.r.close();
    const deadline = Date.now() + 10_000;
    let again: Awaited<ReturnType<typeof openStream>> | undefined;
    while (Date.now() < deadline) {
      again = await openStream(`${f.baseUrl}/webhooks/events?config_id=live-c`);
      if (again.res.status === 200) break;
      await new Promise((ok) => setTimeout(ok, 100));
    }
    expect(again!.res.status).toBe(200);
    b.r.close();
    again!.r.close();
  });

  it('refuses a stream without config_id or with a bad state, naming the field', async () => {
    const r = await fetch(`${f.baseUrl}/webhooks/events`);
    expect(r.status).toBe(400);
    expect(((await r.json()) as { error: { field: string } }).error.field).toBe('config_id');
    const s = await fetch(`${f.baseUrl}/webhooks/events?config_id=x&state=nope`);
    expect(s.status).toBe(400);
    expect(((await s.json()) as { error: { field: string } }).error.field).toBe('state');
  });

  it('counts enqueued webhooks in the current minute of GET /stats/timeline', async () => {
    const before = (await (await fetch(`${f.baseUrl}/stats/timeline?window=1h`)).json()) as { buckets: { enqueued: number }[] };
    await enqueue('live-t', 3);
    const t = (await (await fetch(`${f.baseUrl}/stats/timeline`)).json()) as { window: string; bucket_seconds: number; buckets: { enqueued: number }[] };
    expect(t.window).toBe('1h');
    expect(t.bucket_seconds).toBe(60);
    const sum = (b: { enqueued: number }[]) => b.reduce((s, x) => s + x.enqueued, 0);
    expect(sum(t.buckets) - sum(before.buckets)).toBe(3);
    const day = (await (await fetch(`${f.baseUrl}/stats/timeline?window=24h`)).json()) as { buckets: unknown[] };
    expect(day.buckets).toHaveLength(96);
    const bad = await fetch(`${f.baseUrl}/stats/timeline?window=7d`);
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { field: string } }).error.field).toBe('window');
  });

  it('reports the gauges of the in-process log and guards: with no worker, every webhook enqueued is consumer lag', async () => {
    const g = (await (await fetch(`${f.baseUrl}/stats/gauges`)).json()) as Record<string, number | null>;
    const pending = f.records('pending').length;
    expect(pending).toBeGreaterThan(0);
    expect(g).toEqual({ retry_queue: 0, in_flight: 0, slow_lane: 0, consumer_lag: pending, open_circuits: 0 });
  });
});

describe('live updates with API keys', () => {
  let f: TestFleet;
  beforeAll(async () => {
    f = await startTestFleet('memory', { roles: { api: true, worker: false, scheduler: false }, overrides: { 'api.auth.enabled': true, 'api.events.poll_interval': 50 } });
    await f.fleet.security!.ready;
  });
  afterAll(() => f?.stop());

  it("needs the read scope, and a key bound to config A streams A's webhooks only", async () => {
    const bound = (await f.fleet.security!.keys!.create({ name: 'bound', scopes: ['read'], config_ids: ['cfg-a'] })).key;
    const enq = (await f.fleet.security!.keys!.create({ name: 'enq', scopes: ['enqueue'] })).key;
    const get = (config: string, key?: string) => fetch(`${f.baseUrl}/webhooks/events?config_id=${config}`, { headers: key ? { authorization: `Bearer ${key}` } : {} });
    expect((await get('cfg-a')).status).toBe(401);
    expect((await get('cfg-a', enq)).status).toBe(403);
    expect((await get('cfg-b', bound)).status).toBe(403);
    const ok = await get('cfg-a', bound);
    expect(ok.status).toBe(200);
    await ok.body?.cancel();
  });
});
