import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../core/ports/logger';
import { deadLetterOf, deadLetterRecords } from '../helpers/dead-letters';
import { waitFor } from '../helpers/env';
import { startTestFleet, type TestFleet } from '../helpers/fleet';
import { redisLeaks, topicLeaks } from '../helpers/leak-scan';
import { startReceiver, type Receiver } from '../helpers/receiver';
import { useRedisDb } from '../helpers/redis-db';

// Delivery-time secret injection (the "secret injection" transformer pattern) on
// real Kafka + Redis (a db of its own): a transformer's name.json declares ${VAR} templates in
// _delivery_headers / _delivery_query_params; the worker resolves them from allow-listed
// environment variables when it sends. The receiver gets the values; no topic, no Redis key
// and no log line ever holds them. A variable outside the allowlist, or unset, dead-letters.

const rand = () => Math.random().toString(36).slice(2, 10);
const TOKEN = `tok-${rand()}${rand()}`;
const KEY = `key-${rand()}${rand()}`;
const FORBIDDEN = `forbidden-${rand()}${rand()}`;
const NARROW = `narrow-${rand()}${rand()}`;
const SECRETS = [TOKEN, KEY, FORBIDDEN, NARROW];
const redisDb = useRedisDb();

describe('delivery-time secret injection (kafka)', () => {
  let f: TestFleet;
  let rx: Receiver;
  let dir: string;
  const logs: string[] = [];
  beforeAll(async () => {
    process.env.HOWK_IT_PARTNER_TOKEN = TOKEN;
    process.env.HOWK_IT_PARTNER_KEY = KEY;
    process.env.HOWK_IT_FORBIDDEN = FORBIDDEN; // set, but not allow-listed
    process.env.HOWK_IT_NARROW = NARROW; // allow-listed for another host
    delete process.env.HOWK_IT_UNSET;
    dir = await mkdtemp(join(tmpdir(), 'howk-secrets-'));
    const post = `assert(howk.post(request.payload.deliver_to, { order = request.payload.order }))`;
    const files: Record<string, string> = {
      'partner.lua': post,
      'partner.json': JSON.stringify({
        _delivery_headers: { Authorization: 'Bearer ${HOWK_IT_PARTNER_TOKEN}' },
        _delivery_query_params: { api_key: '${HOWK_IT_PARTNER_KEY}' },
      }),
      // Per-webhook templates from the script (howk.post opts) win over name.json's.
      'perpost.lua': `assert(howk.post(request.payload.deliver_to, { order = request.payload.order }, { delivery_headers = { ['X-Partner-Key'] = 'k=\${HOWK_IT_PARTNER_KEY};t=\${HOWK_IT_PARTNER_TOKEN}' } }))`,
      'leaky.lua': post,
      'leaky.json': JSON.stringify({ _delivery_headers: { 'X-Stolen': '${HOWK_IT_FORBIDDEN}' } }),
      // Allow-listed and set, but bound to a partner host: never sent to the receiver.
      'narrow.lua': post,
      'narrow.json': JSON.stringify({ _delivery_headers: { 'X-Narrow': '${HOWK_IT_NARROW}' } }),
      'unset.lua': post,
      'unset.json': JSON.stringify({ _delivery_query_params: { k: '${HOWK_IT_UNSET}' } }),
    };
    for (const [file, text] of Object.entries(files)) await writeFile(join(dir, file), text);
    // The first attempt of /flaky fails: the retry resolves the templates again.
    rx = await startReceiver((r, nth) => (r.path.startsWith('/flaky') && nth === 1 ? { status: 503 } : { status: 200, body: 'ok' }));
    f = await startTestFleet('kafka', {
      redisDb: redisDb(),
      log: createLogger('test', 'debug', (l) => logs.push(l)),
      overrides: {
        'transformer.script_dirs': [dir],
        'lua.secret_env_allowlist': ['HOWK_IT_PARTNER_TOKEN', 'HOWK_IT_PARTNER_KEY', 'HOWK_IT_UNSET', 'HOWK_IT_NARROW'],
        'lua.secret_env_hosts': { HOWK_IT_PARTNER_TOKEN: ['127.0.0.1'], HOWK_IT_PARTNER_KEY: ['127.0.0.1'], HOWK_IT_UNSET: ['127.0.0.1'], HOWK_IT_NARROW: ['api.partner.invalid'] },
      },
    });
  });
  afterAll(async () => {
    await f?.stop();
    await rx?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
    for (const k of ['HOWK_IT_PARTNER_TOKEN', 'HOWK_IT_PARTNER_KEY', 'HOWK_IT_FORBIDDEN', 'HOWK_IT_NARROW']) delete process.env[k];
  });

  const incoming = async (name: string, body: unknown): Promise<string> => {
    const res = await f.post(`/incoming/${name}`, body);
    const json = (await res.json()) as any;
    expect(res.status, JSON.stringify(json)).toBe(200);
    return json.webhooks[0].id;
  };

  it('the receiver gets the resolved header and query parameter', async () => {
    await incoming('partner', { order: 1, deliver_to: rx.url('/partner?x=1') });
    const got = await waitFor(() => rx.received.find((r) => r.path.startsWith('/partner')), { what: 'partner delivery' });
    expect(got.headers.authorization).toBe(`Bearer ${TOKEN}`);
    const url = new URL(got.path, 'http://h');
    expect(url.searchParams.get('api_key')).toBe(KEY);
    expect(url.searchParams.get('x')).toBe('1');
    expect(JSON.parse(got.body.toString())).toEqual({ order: 1 });
  });

  it('resolves per-webhook templates of howk.post, on every attempt of a retried webhook', async () => {
    const id = await incoming('perpost', { order: 2, deliver_to: rx.url('/flaky') });
    await waitFor(() => rx.received.filter((r) => r.path === '/flaky').length >= 2, { what: 'first attempt and retry' });
    const both = rx.received.filter((r) => r.path === '/flaky');
    for (const r of both) expect(r.headers['x-partner-key']).toBe(`k=${KEY};t=${TOKEN}`);
    expect(new Set(both.map((r) => r.headers['webhook-id']))).toEqual(new Set([id]));
    const st = await waitFor(
      async () => {
        const s = (await (await fetch(`${f.baseUrl}/webhooks/${id}/status`)).json()) as any;
        return s.state === 'delivered' ? s : undefined;
      },
      { what: 'delivered status' },
    );
    expect(st.attempts).toBe(2);
  });

  it('dead-letters a variable outside the allowlist (secret_not_allowed) and an unset one (secret_missing), sending nothing', async () => {
    const leaky = await incoming('leaky', { order: 3, deliver_to: rx.url('/leaky') });
    const unset = await incoming('unset', { order: 4, deliver_to: rx.url('/unset') });
    const dead = await waitFor(
      () => {
        const ds = deadLetterRecords(f);
        const a = ds.find((d) => d.webhook_id === leaky);
        const b = ds.find((d) => d.webhook_id === unset);
        return a && b ? { a, b } : undefined;
      },
      { what: 'two dead letters' },
    );
    expect(dead.a).toMatchObject({ reason_type: 'secret_not_allowed', reason: 'secret template not resolved: ${HOWK_IT_FORBIDDEN} is not in lua.secret_env_allowlist' });
    expect(dead.b).toMatchObject({
      reason_type: 'secret_missing',
      reason: "secret template not resolved: ${HOWK_IT_UNSET} is allow-listed but not set in the worker's environment",
    });
    // The dead letter keeps the template (what to fix), not a value.
    expect(dead.a.webhook.delivery_headers).toEqual({ 'x-stolen': '${HOWK_IT_FORBIDDEN}' });
    const st = (await (await fetch(`${f.baseUrl}/webhooks/${leaky}/status`)).json()) as any;
    expect(st).toMatchObject({ state: 'failed', dead_reason: 'secret_not_allowed' });
    expect(rx.received.filter((r) => r.path.startsWith('/leaky') || r.path.startsWith('/unset'))).toHaveLength(0);
  });

  it('dead-letters a secret bound to other hosts (secret_host_not_allowed), sending nothing', async () => {
    const id = await incoming('narrow', { order: 6, deliver_to: rx.url('/narrow') });
    const d = await waitFor(() => deadLetterOf(f, id), { what: 'narrow dead letter' });
    expect(d).toMatchObject({
      reason_type: 'secret_host_not_allowed',
      reason: 'secret template not resolved: ${HOWK_IT_NARROW} may not be sent to 127.0.0.1 (not in lua.secret_env_hosts.HOWK_IT_NARROW)',
    });
    const st = (await (await fetch(`${f.baseUrl}/webhooks/${id}/status`)).json()) as any;
    expect(st).toMatchObject({ state: 'failed', dead_reason: 'secret_host_not_allowed' });
    expect(rx.received.filter((r) => r.path.startsWith('/narrow'))).toHaveLength(0);
  });

  it('does not take templates from an enqueue request (only operators declare them)', async () => {
    const res = await f.post('/webhooks/direct/enqueue', { endpoint: rx.url('/direct'), payload: { order: 5 }, delivery_headers: { 'X-Token': '${HOWK_IT_PARTNER_TOKEN}' } });
    expect(res.status).toBe(202);
    const got = await waitFor(() => rx.received.find((r) => r.path === '/direct'), { what: 'direct delivery' });
    expect(got.headers['x-token']).toBeUndefined();
    expect(JSON.stringify(got.headers)).not.toContain(TOKEN);
  });

  it('no topic, no Redis key and no log line holds a resolved value', async () => {
    // Positive control: the scans see the templates that ARE stored.
    expect(topicLeaks(f, 'HOWK_IT_PARTNER_TOKEN').length).toBeGreaterThan(0);
    expect((await redisLeaks(redisDb(), 'HOWK_IT_FORBIDDEN')).found.length).toBeGreaterThan(0);
    expect(logs.some((l) => l.includes('secret template not resolved'))).toBe(true);
    for (const secret of SECRETS) {
      expect(topicLeaks(f, secret), secret).toEqual([]);
      const redis = await redisLeaks(redisDb(), secret);
      expect(redis.keys).toBeGreaterThan(0);
      expect(redis.found, secret).toEqual([]);
      expect(
        logs.filter((l) => l.includes(secret)),
        secret,
      ).toEqual([]);
    }
  });
});
