import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uniq, waitFor } from '../helpers/env';
import { startTestFleet, type TestFleet } from '../helpers/fleet';
import { startReceiver, type Receiver } from '../helpers/receiver';

// What tenants share on one api process, on real Kafka + Redis with auth on, as a tenant with
// a key bound to its own config attacks it: event streams (HEAD, the per-config share, the
// lifetime), bulk replay jobs (the share, unknown ids, the job table), ?wait= waiters (the
// share) and the last errors of an endpoint URL two configs use. docs/SECURITY.md, Fair shares.

type Stream = { status: number; headers: Headers; until: (re: RegExp) => Promise<string>; ended: Promise<number>; close: () => void };

describe('fair shares of what tenants share (Kafka + Redis, auth on)', () => {
  let f: TestFleet;
  let rx: Receiver;
  let admin: string;
  const [A, B] = [uniq('tenantA'), uniq('tenantB')];
  const keys: Record<string, string> = {};

  const call = async (method: string, path: string, key: string, body?: unknown) => {
    const r = await fetch(`${f.baseUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    return { status: r.status, headers: r.headers, body: (await r.json()) as any };
  };

  /** GET /webhooks/events read as it comes; `ended` resolves (ms after the open) when the server ends it. */
  const stream = async (config: string, key: string): Promise<Stream> => {
    const ac = new AbortController();
    const t0 = Date.now();
    const res = await fetch(`${f.baseUrl}/webhooks/events?config_id=${config}`, { headers: { authorization: `Bearer ${key}` }, signal: ac.signal });
    let buf = '';
    const ended = (async () => {
      if (!res.ok || !res.body) {
        buf = await res.text();
        return Date.now() - t0;
      }
      const dec = new TextDecoder();
      try {
        for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) buf += dec.decode(chunk);
      } catch {
        /* closed by the test */
      }
      return Date.now() - t0;
    })();
    const until = async (re: RegExp) => (await waitFor(() => re.test(buf), { what: `${re} on the stream`, timeoutMs: 10_000 }), buf);
    return { status: res.status, headers: res.headers, until, ended, close: () => ac.abort() };
  };

  beforeAll(async () => {
    rx = await startReceiver((r) => {
      if (r.path.startsWith('/reject')) return { status: 400 };
      if (r.path.startsWith('/sleep')) return { status: 200, delayMs: 2500 };
      if (r.path.startsWith('/shared')) return { status: r.body.toString().includes('"tenant":"B"') ? 418 : 500 };
      return { status: 200 };
    });
    f = await startTestFleet('kafka', {
      overrides: {
        'api.auth.enabled': true,
        'api.events.max_subscribers': 10,
        'api.events.max_per_config': 3,
        'api.events.max_lifetime': '3s',
        'api.events.heartbeat': 500,
        'api.events.poll_interval': 100,
        'api.sync_max_wait': '4s',
        'api.sync_max_waiting': 10,
        'api.sync_max_waiting_per_config': 2,
      },
    });
    await f.fleet.security!.ready;
    admin = (await f.fleet.security!.keys!.create({ scopes: ['admin'] })).key;
    for (const c of [A, B]) keys[c] = (await f.fleet.security!.keys!.create({ scopes: ['admin'], config_ids: [c] })).key;
    await waitFor(async () => (await call('GET', '/keys/me', keys[B]!)).status === 200, { what: 'the keys loaded' });
    // The worker's consumers have their partitions: a later wait is not spent on the first assignment.
    const warm = await call('POST', `/webhooks/${uniq('warm')}/enqueue`, admin, { endpoint: rx.url('/ok'), payload: {} });
    await waitFor(() => rx.byWebhook().get(warm.body.webhook_id), { what: 'the first delivery', timeoutMs: 60_000 });
  }, 120_000);
  afterAll(async () => {
    await f?.stop();
    await rx?.close();
  });

  it('a hundred HEADs of the stream route hold no stream: every tenant still streams', async () => {
    for (let i = 0; i < 100; i += 10) {
      const heads = await Promise.all(
        Array.from({ length: 10 }, () => fetch(`${f.baseUrl}/webhooks/events?config_id=${A}`, { method: 'HEAD', headers: { authorization: `Bearer ${keys[A]}` } })),
      );
      for (const h of heads) expect([h.status, h.headers.get('content-type')]).toEqual([200, 'text/event-stream']);
    }
    const b = await stream(B, keys[B]!);
    const a = await stream(A, keys[A]!);
    expect([b.status, a.status]).toEqual([200, 200]);
    await b.until(/: connected\nretry: 3000/);
    b.close();
    a.close();
  });

  it("a tenant at its share of streams gets 429 + Retry-After; another tenant's stream opens", async () => {
    const config = uniq('streamsA');
    const key = (await f.fleet.security!.keys!.create({ scopes: ['read'], config_ids: [config] })).key;
    const mine = await Promise.all([0, 1, 2].map(() => stream(config, key)));
    expect(mine.map((s) => s.status)).toEqual([200, 200, 200]);
    const over = await stream(config, key);
    if (over.status === 200) over.close();
    expect([over.status, over.headers.get('retry-after')]).toEqual([429, '5']);
    await over.ended;
    expect(await over.until(/"code":"too_many_streams"/)).toContain('api.events.max_per_config');
    const other = await stream(B, keys[B]!);
    expect(other.status).toBe(200);
    for (const s of [...mine, other]) s.close();
  });

  it('the server ends a stream at api.events.max_lifetime, and its slot is free again', async () => {
    const config = uniq('lifetime');
    const key = (await f.fleet.security!.keys!.create({ scopes: ['read'], config_ids: [config] })).key;
    const first = await Promise.all([0, 1, 2].map(() => stream(config, key)));
    await first[0]!.until(/: heartbeat/);
    const lasted = await Promise.race([first[0]!.ended, new Promise<number>((r) => setTimeout(() => r(-1), 10_000))]);
    expect(lasted).toBeGreaterThanOrEqual(2900);
    expect(lasted).toBeLessThan(6000);
    await Promise.all(first.map((s) => s.ended));
    const again = await stream(config, key);
    expect(again.status).toBe(200);
    again.close();
  }, 20_000);

  /** `n` dead letters of `config` (the receiver answers 400: dead at the first attempt). */
  const deadLetters = async (config: string, n: number): Promise<string[]> => {
    const webhooks = Array.from({ length: n }, (_, i) => ({ endpoint: rx.url(`/reject/${config}`), payload: { i } }));
    expect((await call('POST', `/webhooks/${config}/enqueue/batch`, admin, { webhooks })).status).toBe(202);
    const page = await waitFor(
      async () => {
        const items = (await call('GET', `/deadletter?config_id=${config}&limit=500`, admin)).body.items as { webhook_id: string }[];
        return items.length >= n ? items : null;
      },
      { what: `${n} dead letters of ${config}` },
    );
    return page.map((d) => d.webhook_id);
  };
  const job = (config: string, body: object) => call('POST', `/deadletter/replay?config_id=${config}`, keys[config]!, body);
  const finished = (id: string) =>
    waitFor(
      async () => {
        const v = (await call('GET', `/deadletter/replay/${id}`, admin)).body;
        return v.state !== 'running' ? v : null;
      },
      { what: `job ${id} to end`, timeoutMs: 20_000 },
    );

  it("a tenant at its share of bulk replays gets 409 too_many_jobs; another tenant's job starts", async () => {
    const ids = await deadLetters(A, 3);
    const mine = [await job(A, { ids, rate: 1 }), await job(A, { ids, rate: 1 })];
    expect(mine.map((r) => r.status)).toEqual([202, 202]);
    const over = await job(A, { ids, rate: 1 });
    expect([over.status, over.body.error.code]).toEqual([409, 'too_many_jobs']);
    const other = await job(B, { ids: ['wh_none'], rate: 1 });
    expect(other.status).toBe(202);
    for (const r of mine) await call('POST', `/deadletter/replay/${r.body.job_id}/stop`, keys[A]!);
    for (const r of mine) await finished(r.body.job_id);
  }, 60_000);

  it('a job of 1,000 unknown ids at rate 1 ends in seconds: the rate paces replays made, not misses', async () => {
    const started = Date.now();
    const r = await job(A, { ids: Array.from({ length: 1000 }, (_, i) => `wh_unknown_${i}`), rate: 1 });
    expect(r.status).toBe(202);
    const done = await finished(r.body.job_id);
    expect([done.state, done.not_found, done.replayed]).toEqual(['done', 1000, 0]);
    expect(Date.now() - started).toBeLessThan(20_000);
  }, 30_000);

  it("one tenant's churn of jobs forgets its own finished jobs, never another tenant's", async () => {
    const theirs = (await job(B, { ids: ['wh_none'], rate: 200 })).body.job_id as string;
    await finished(theirs);
    const mine: string[] = [];
    for (let i = 0; i < 105; i++) {
      const r = await job(A, { ids: [`wh_none_${i}`], rate: 200 });
      expect(r.status).toBe(202);
      mine.push(r.body.job_id);
      await finished(r.body.job_id);
    }
    expect((await call('GET', `/deadletter/replay/${theirs}`, keys[B]!)).body).toMatchObject({ state: 'done', not_found: 1 });
    expect((await call('GET', `/deadletter/replay/${mine[0]}`, keys[A]!)).status).toBe(404);
    expect((await call('GET', `/deadletter/replay/${mine[104]}`, keys[A]!)).status).toBe(200);
  }, 90_000);

  it("a tenant at its share of ?wait= waiters is answered at once (Howk-Wait: busy); another tenant's wait is granted", async () => {
    const enqueue = (config: string, path: string) =>
      fetch(`${f.baseUrl}/webhooks/${config}/enqueue?wait=4s`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${keys[config]}` },
        body: JSON.stringify({ endpoint: rx.url(path), payload: {} }),
      });
    const held = [enqueue(A, '/sleep/a1'), enqueue(A, '/sleep/a2')];
    await new Promise((r) => setTimeout(r, 300));
    const t0 = Date.now();
    const busy = await enqueue(A, '/ok');
    expect([busy.status, busy.headers.get('howk-wait'), ((await busy.json()) as { status: string }).status]).toEqual([202, 'busy', 'pending']);
    expect(Date.now() - t0).toBeLessThan(1500);
    const other = await enqueue(B, '/ok');
    expect([other.status, other.headers.get('howk-wait'), other.headers.get('preference-applied')]).toEqual([200, 'done', 'wait=4']);
    for (const r of await Promise.all(held)) expect(r.headers.get('howk-wait')).not.toBe('busy');
  }, 30_000);

  it("a key bound to a config sees its own config's last errors of a shared endpoint URL, not another tenant's", async () => {
    const shared = rx.url('/shared');
    for (const [config, tenant] of [
      [A, 'A'],
      [B, 'B'],
    ] as const) {
      const r = await call('POST', `/webhooks/${config}/enqueue`, admin, { endpoint: shared, payload: { tenant }, max_attempts: 1 });
      expect(r.status).toBe(202);
      await waitFor(async () => (await call('GET', `/webhooks/${r.body.webhook_id}/status`, admin)).body.attempts >= 1, { what: `${tenant}'s attempt` });
    }
    const errorsOf = async (key: string) => {
      const row = (await call('GET', `/endpoints?config_id=${A}`, key)).body.items.find((e: { endpoint: string }) => e.endpoint === shared);
      return (row.last_errors as { error: string }[]).map((e) => e.error);
    };
    // An operator's key sees the endpoint's errors, whoever's; the tenant sees only its own.
    expect((await errorsOf(admin)).sort()).toEqual(['HTTP 418', 'HTTP 500']);
    expect(await errorsOf(keys[A]!)).toEqual(['HTTP 500']);
  });
});
