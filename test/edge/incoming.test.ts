import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedis } from '../../workers/redis/client';
import { runTransformer } from '../../core/lua';
import { decodeWebhook } from '../../core/records/webhook';
import { enqueueItemSchema } from '../../core/domain/enqueue';
import { transformerItems } from '../../core/transformers/items';
import { parseSettings } from '../../core/transformers/settings';
import { waitFor } from '../helpers/env';
import { TEST_SECRET } from '../helpers/fleet';
import { freePort, spawnRole, stopProc, type Proc } from '../helpers/procs';
import { startReceiver, type Receiver } from '../helpers/receiver';
import { verifyStandardWebhook } from '../helpers/standard-webhooks';
import { SIGNERS, stripe } from './fixtures/signers';
import { recordView, TRANSFORMER_CASES, transformerSource, type TransformerCase } from './fixtures/transformer-cases';
import { collect, configOf, edgeVars, ensureTopics, fleetEnv, startBridge, startEdge, useFleetRedisDb, type Bridge, type Edge } from './helpers/stack';

// /incoming/:name at the edge: signatures checked on the raw bytes, transformers on the core
// Lua engine inside workerd, their webhooks produced whole and delivered by howk-worker; the
// same bundled scripts run by howk-api (core's one route) produce the same records.
const TEMPLATE_VALUES = { PARTNER_TOKEN: 'tok-edge-parity', TENANT_ID: '42', PARTNER_KEY: 'key-edge-parity' };

describe('/incoming at the edge', () => {
  const env = fleetEnv();
  useFleetRedisDb(env);
  const topics = configOf(env).kafka.topics;
  let bridge: Bridge;
  let worker: Proc;
  let api: Proc;
  let apiUrl: string;
  let edge: Edge;
  let rx: Receiver;
  let records: Awaited<ReturnType<typeof collect>>;
  const secrets = Object.fromEntries(
    SIGNERS.filter((s) => s.provider !== 'stripe').flatMap((s) => [
      [`${s.provider.toUpperCase()}_SECRET`, s.secrets[1]],
      [`${s.provider.toUpperCase()}_SECRET_OLD`, s.secrets[0]],
    ]),
  );
  const stripeSigner = SIGNERS.find((s) => s.provider === 'stripe')!;

  beforeAll(async () => {
    await ensureTopics(env);
    rx = await startReceiver();
    bridge = await startBridge(env);
    const allTemplateVars = Object.keys(TEMPLATE_VALUES);
    worker = spawnRole('worker', {
      ...env,
      ...TEMPLATE_VALUES,
      HOWK_LUA_SECRET_ENV_ALLOWLIST: allTemplateVars.join(','),
      HOWK_LUA_SECRET_ENV_HOSTS: JSON.stringify(Object.fromEntries(allTemplateVars.map((v) => [v, ['127.0.0.1']]))),
    });
    const transformerSecrets = { ...secrets, STRIPE_WHSEC: stripeSigner.secrets[1], STRIPE_WHSEC_OLD: stripeSigner.secrets[0], INCOMING_BASIC: 'ops:s3cret' };
    const port = await freePort();
    apiUrl = `http://127.0.0.1:${port}`;
    api = spawnRole('api', {
      ...env,
      ...transformerSecrets,
      HOWK_API_HOST: '127.0.0.1',
      HOWK_API_PORT: String(port),
      HOWK_TRANSFORMER_SCRIPT_DIRS: 'test/edge/fixtures/transformers',
    });
    edge = await startEdge(edgeVars(env, bridge.url, transformerSecrets));
    await waitFor(async () => (await fetch(`${apiUrl}/ready`).catch(() => undefined))?.ok, { timeoutMs: 90_000, intervalMs: 200, what: `howk-api /ready\n${api.output()}` });
    records = await collect(env, [topics.pending, topics.slow]);
  });
  afterAll(async () => {
    await records?.stop();
    await edge?.stop();
    await Promise.all([worker && stopProc(worker), api && stopProc(api), bridge?.stop()]);
    await rx?.close();
  });

  const dest = () => rx.url('').replace(/\/$/, '');
  const post = (script: string, body: string, headers: Record<string, string> = {}, base = edge.url) =>
    fetch(`${base}/incoming/${script}?dest=${encodeURIComponent(dest())}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
  const produced = async () => (await bridge.stats()).produce_records;
  const allOnKafka = () => [...records.of(topics.pending), ...records.of(topics.slow)].map((r) => decodeWebhook(r.value!));
  const webhookOnKafka = (id: string) => allOnKafka().find((w) => w.id === id);
  const expected = (c: Extract<TransformerCase, { webhooks: unknown }>) =>
    c.webhooks.map((w) => ({
      endpoint: dest() + w.path,
      payload: w.payload,
      headers: w.headers ?? {},
      delivery_headers: w.delivery_headers,
      delivery_query_params: w.delivery_query_params,
    }));
  const shown = (v: ReturnType<typeof recordView>) => ({
    endpoint: v.endpoint,
    payload: v.payload,
    headers: v.headers,
    delivery_headers: v.delivery_headers,
    delivery_query_params: v.delivery_query_params,
  });
  /** Posts a case to one /incoming and reads its webhooks back from Kafka. */
  const through = async (base: string, c: TransformerCase) => {
    const res = await post(c.script, c.body, c.headers, base);
    const body = (await res.json()) as any;
    if (res.status !== 200) return { status: res.status, body, views: [] };
    const got = await waitFor(
      () => {
        const ws = body.webhooks.map((w: { id: string }) => webhookOnKafka(w.id));
        return ws.every(Boolean) ? ws : undefined;
      },
      { what: 'the webhooks on Kafka' },
    );
    return { status: res.status, body, views: got.map(recordView) as ReturnType<typeof recordView>[] };
  };

  describe.each(TRANSFORMER_CASES)('transformer case: $name', (c) => {
    it('in Node, on the core Lua engine', async () => {
      const { code, json } = transformerSource(c.script);
      const settings = parseSettings(JSON.parse(json));
      const run = runTransformer(code, { body: c.body, headers: c.headers ?? {}, query: { dest: dest() }, script: c.script }, { allowedDomains: settings.allowed_domains });
      if ('error' in c) return void (await expect(run).rejects.toMatchObject({ code: c.error }));
      const items = transformerItems(c.script, (await run).webhooks, enqueueItemSchema(configOf(env).api), settings);
      expect(items.map((w) => ({ ...w, payload: JSON.parse(w.payload) }))).toEqual(expected(c).map((w) => JSON.parse(JSON.stringify(w))));
    });

    it('in workerd, through /incoming and Kafka', async () => {
      const before = await produced();
      const r = await through(edge.url, c);
      if ('error' in c) {
        expect(r.status).toBe(422);
        expect(r.body.error.code).toBe(c.error);
        expect(await produced()).toBe(before);
        return;
      }
      expect(r.status).toBe(200);
      expect(r.body.count).toBe(c.webhooks.length);
      expect(r.views.map(shown)).toEqual(expected(c));
    });

    it('through howk-api, the very records the edge produces', async () => {
      const [viaApi, viaEdge] = [await through(apiUrl, c), await through(edge.url, c)];
      expect(viaApi.status).toBe(viaEdge.status);
      if ('error' in c) return void expect(viaApi.body.error.code).toBe(c.error);
      expect(viaApi.views).toEqual(viaEdge.views);
      expect(viaApi.views.map(shown)).toEqual(expected(c));
    });
  });

  it("delivers the edge's templated webhooks with the worker's values (the auth header is not dropped)", async () => {
    const r = await through(
      edge.url,
      TRANSFORMER_CASES.find((c) => c.script === 'templates')!,
    );
    expect(r.status).toBe(200);
    const got = await waitFor(
      () => {
        const ds = r.body.webhooks.map((w: { id: string }) => rx.received.find((d) => d.headers['webhook-id'] === w.id));
        return ds.every(Boolean) ? ds : undefined;
      },
      { timeoutMs: 60_000, what: `the templated deliveries\n${worker.output()}` },
    );
    expect(got.map((d: any) => [d.path, d.headers.authorization, d.headers['x-tenant']])).toEqual([
      ['/partner?api_key=key-edge-parity', 'Bearer tok-edge-parity', 't-42'],
      ['/partner-eu?api_key=key-edge-parity', 'Bearer tok-edge-parity', 'eu-42'],
    ]);
    // The values exist only in the request: the records carry the templates.
    expect(JSON.stringify(allOnKafka())).not.toContain('tok-edge-parity');
  });

  it('fans a Stripe event out to 3 webhooks, all delivered and signed', async () => {
    const event = JSON.stringify({
      id: `evt_${Date.now()}`,
      object: 'event',
      type: 'charge.succeeded',
      data: { object: { id: 'ch_1', amount: 1099, currency: 'eur', customer: 'cus_7' } },
    });
    const sig = stripe.webhooks.generateTestHeaderString({ payload: event, secret: stripeSigner.secrets[1] });
    const res = await post('stripe-fanout', event, { 'stripe-signature': sig });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { count: number; webhooks: { id: string; endpoint: string }[] };
    expect(body.count).toBe(3);
    expect(body.webhooks.map((w) => new URL(w.endpoint).pathname)).toEqual(['/billing', '/analytics', '/crm']);
    const deliveries = await waitFor(
      () => {
        const got = body.webhooks.map((w) => rx.received.find((r) => r.headers['webhook-id'] === w.id));
        return got.every(Boolean) ? got : undefined;
      },
      { timeoutMs: 60_000, what: `the 3 deliveries\n${worker.output()}` },
    );
    for (const d of deliveries) expect(verifyStandardWebhook(TEST_SECRET, d!.headers as Record<string, string>, d!.body)).toBe(true);
    expect(deliveries[1]!.body.toString()).toBe(event);
    expect(deliveries[1]!.headers['x-stripe-event']).toBe('charge.succeeded');
    expect(JSON.parse(deliveries[0]!.body.toString())).toEqual({ charge: 'ch_1', amount: 1099, currency: 'eur' });
    // A copy of the request runs nothing: the first answer, marked as a replay.
    const copy = await post('stripe-fanout', event, { 'stripe-signature': sig });
    expect([copy.headers.get('howk-replay'), await copy.json()]).toEqual(['true', body]);
    // Stripe's retry of the event (signed anew): its keyed webhooks are duplicates, the unkeyed one is new.
    const resigned = stripe.webhooks.generateTestHeaderString({ payload: event, secret: stripeSigner.secrets[1], timestamp: Math.floor(Date.now() / 1000) + 1 });
    const again = (await (await post('stripe-fanout', event, { 'stripe-signature': resigned })).json()) as { webhooks: { id: string }[] };
    expect(again.webhooks.map((w, i) => w.id === body.webhooks[i]!.id)).toEqual([true, false, true]);
  });

  describe.each(SIGNERS)('$provider signatures at the edge', (s) => {
    const script = s.provider === 'stripe' ? 'stripe-fanout' : `verify-${s.provider}`;
    const event = () =>
      JSON.stringify({
        id: `evt_${Math.random().toString(36).slice(2)}`,
        type: 'charge.succeeded',
        data: { object: { id: 'ch_2', amount: 5, currency: 'usd', customer: 'cus_1' } },
      });
    const now = () => Math.floor(Date.now() / 1000);

    it('accepts events signed with the current or the previous secret', async () => {
      for (const secret of s.secrets) {
        const body = event();
        const res = await post(script, body, await s.sign(body, secret, now()));
        expect(res.status).toBe(200);
        expect(((await res.json()) as { count: number }).count).toBeGreaterThan(0);
      }
    });

    it('refuses a changed byte, a wrong secret, a stale timestamp and a missing header with 401, producing nothing', async () => {
      const body = event();
      const good = await s.sign(body, s.secrets[1], now());
      const attempts: [string, string, Record<string, string>][] = [
        ['changed byte', body.replace('"amount":5', '"amount":6'), good],
        ['wrong secret', body, await s.sign(body, s.wrongSecret, now())],
        ['missing header', body, Object.fromEntries(Object.entries(good).filter(([k]) => !s.signatureHeaders.includes(k)))],
      ];
      if (s.timestamped) attempts.push(['stale timestamp', body, await s.sign(body, s.secrets[1], now() - 3600)]);
      const before = await produced();
      for (const [what, b, headers] of attempts) {
        const res = await post(script, b, headers);
        expect(res.status, what).toBe(401);
        expect(((await res.json()) as any).error.code, what).toBe('unauthorized');
      }
      expect(await produced()).toBe(before);
    });
  });

  it('runs a signed request once: copies to the edge and to howk-api get the first answer (one Redis)', async () => {
    const s = SIGNERS.find((x) => x.provider === 'standard')!;
    const evt = `evt_replay_${Date.now()}`;
    const body = JSON.stringify({ id: evt });
    const headers = await s.sign(body, s.secrets[1], Math.floor(Date.now() / 1000));
    const carrying = () => [...records.of(topics.pending), ...records.of(topics.slow)].filter((r) => r.value?.includes(evt)).length;
    const first = await post('verify-standard', body, headers);
    expect([first.status, first.headers.get('howk-replay')]).toEqual([200, null]);
    const answer = (await first.json()) as { count: number };
    for (const base of [edge.url, apiUrl, edge.url]) {
      const copy = await post('verify-standard', body, headers, base);
      expect([copy.status, copy.headers.get('howk-replay'), await copy.json()], base).toEqual([200, 'true', answer]);
    }
    await waitFor(() => carrying() >= 1, { what: 'the first run on Kafka' });
    await new Promise((r) => setTimeout(r, 500));
    expect(carrying()).toBe(1);
  });

  it('gives the Lua kv module Redis through the bridge (KV dedupe)', async () => {
    const id = `evt_kv_${Date.now()}`;
    const body = JSON.stringify({ id });
    const first = (await (await post('kv-dedupe', body)).json()) as { count: number };
    const second = (await (await post('kv-dedupe', body)).json()) as { count: number };
    expect([first.count, second.count]).toEqual([1, 0]);
    const redis = createRedis(env.HOWK_REDIS_URL!);
    try {
      expect(await redis.get(`kv:t:{kv-dedupe}:seen:${id}`)).toBe('1');
      expect(await redis.ttl(`kv:t:{kv-dedupe}:seen:${id}`)).toBeGreaterThan(50);
    } finally {
      await redis.quit();
    }
  });

  it('checks Basic auth from a bundled passwd file (bcrypt) and from basic_auth_secret (plaintext)', async () => {
    const basic = (cred: string) => ({ authorization: `Basic ${Buffer.from(cred).toString('base64')}` });
    const locked = await post('locked', '{}', basic('ops:anything'));
    expect(locked.status).toBe(401);
    expect(locked.headers.get('www-authenticate')).toMatch(/^Basic/);
    expect((await post('locked', '{}')).status).toBe(401);
    expect((await post('locked', '{}', basic('ops:l0cked-pass'))).status).toBe(200);
    expect((await post('basic', '{}')).status).toBe(401);
    expect((await post('basic', '{}', basic('ops:wrong'))).status).toBe(401);
    expect((await post('basic', '{"ok":1}', basic('ops:s3cret'))).status).toBe(200);
  });

  it('stops a runaway script, answers 404 for an unknown one, and enqueues nothing for either', async () => {
    const before = await produced();
    const t0 = Date.now();
    const spin = await post('spin', '{}');
    expect(spin.status).toBe(422);
    expect(((await spin.json()) as any).error.code).toBe('script_timeout');
    expect(Date.now() - t0).toBeLessThan(10_000);
    expect((await post('nope', '{}')).status).toBe(404);
    expect(await produced()).toBe(before);
  });
});
