import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../core/ports/logger';
import { startTestFleet, type TestFleet } from '../helpers/fleet';
import { useRedisDb } from '../helpers/redis-db';
import { SIGNERS } from '../edge/fixtures/signers';

// Inbound signatures, Basic auth and name.json on howk-api's /incoming (real Kafka + Redis):
// the same fixture scripts the edge bundles (test/edge/fixtures/transformers), their secrets
// named by name.json and read from the process environment.

const FIXTURES = 'test/edge/fixtures/transformers';
const ENV: Record<string, string> = {
  ...Object.fromEntries(
    SIGNERS.filter((s) => s.provider !== 'stripe').flatMap((s) => [
      [`${s.provider.toUpperCase()}_SECRET`, s.secrets[1]],
      [`${s.provider.toUpperCase()}_SECRET_OLD`, s.secrets[0]],
    ]),
  ),
  STRIPE_WHSEC: SIGNERS[0]!.secrets[1],
  STRIPE_WHSEC_OLD: SIGNERS[0]!.secrets[0],
  INCOMING_BASIC: 'ops:s3cret',
};

describe('/incoming on howk-api: signatures, Basic auth, name.json (kafka)', () => {
  const redisDb = useRedisDb();
  let f: TestFleet;
  let dir: string;
  const logs: string[] = [];
  beforeAll(async () => {
    Object.assign(process.env, ENV);
    dir = await mkdtemp(join(tmpdir(), 'howk-incoming-verify-'));
    // An edge config of an earlier release: `http_allow` is now `allowed_hosts`.
    await writeFile(join(dir, 'old-key.lua'), `howk.post(request.query.dest .. '/old', request.body)`);
    await writeFile(join(dir, 'old-key.json'), JSON.stringify({ allowed_domains: ['127.0.0.1'], http_allow: ['api.example.com'] }));
    await writeFile(join(dir, 'typo.lua'), `howk.post(request.query.dest .. '/typo', request.body)`);
    await writeFile(join(dir, 'typo.json'), JSON.stringify({ _delivery_header: { Authorization: 'Bearer ${PARTNER_TOKEN}' } }));
    f = await startTestFleet('kafka', {
      redisDb: redisDb(),
      roles: { worker: false, scheduler: false },
      log: createLogger('test', 'debug', (l) => logs.push(l)),
      overrides: { 'transformer.script_dirs': [FIXTURES, dir] },
    });
  });
  afterAll(async () => {
    await f?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
    for (const k of Object.keys(ENV)) delete process.env[k];
  });

  const dest = 'http://127.0.0.1:9/hooks';
  const post = (script: string, body: string, headers: Record<string, string> = {}) =>
    fetch(`${f.baseUrl}/incoming/${script}?dest=${encodeURIComponent(dest)}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
  /** Records of the pending and slow topics carrying this event id (the scripts forward it). */
  const carrying = (evt: string) => [...f.records('pending'), ...f.records('slow')].filter((r) => r.value?.includes(evt)).length;
  const idOf = (body: string) => (JSON.parse(body) as { id: string }).id;
  const now = () => Math.floor(Date.now() / 1000);

  describe.each(SIGNERS)('$provider', (s) => {
    const script = s.provider === 'stripe' ? 'stripe-fanout' : `verify-${s.provider}`;
    const event = () =>
      JSON.stringify({ id: `evt_${Math.random().toString(36).slice(2)}`, type: 'charge.succeeded', data: { object: { id: 'ch_9', amount: 5, currency: 'usd', customer: 'c' } } });

    it('accepts a valid signature, and one made with the second (rotated) secret', async () => {
      for (const secret of [s.secrets[1], s.secrets[0]]) {
        const body = event();
        const res = await post(script, body, await s.sign(body, secret, now()));
        expect(res.status).toBe(200);
        const out = (await res.json()) as { count: number; webhooks: { id: string }[] };
        expect(out.count).toBeGreaterThan(0);
        // What the refusal test counts: an accepted event's records carry its id.
        const until = Date.now() + 10_000;
        while (carrying(idOf(body)) === 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
        expect(carrying(idOf(body))).toBeGreaterThan(0);
      }
    });

    it('refuses a tampered body, a wrong secret and a missing header with 401 naming the reason, enqueuing nothing', async () => {
      const body = event();
      const good = await s.sign(body, s.secrets[1], now());
      const cases: [string, string, Record<string, string>, string][] = [
        ['tampered body', body.replace('"amount":5', '"amount":6'), good, 'bad_signature'],
        ['wrong secret', body, await s.sign(body, s.wrongSecret, now()), 'bad_signature'],
        ['missing header', body, Object.fromEntries(Object.entries(good).filter(([k]) => !s.signatureHeaders.includes(k))), 'missing_header'],
      ];
      // Counted by this test's event id: a record of the test before (accepted) may still be
      // arriving from Kafka.
      for (const [what, b, headers, reason] of cases) {
        const res = await post(script, b, headers);
        expect(res.status, what).toBe(401);
        const err = ((await res.json()) as { error: { code: string; reason: string; message: string } }).error;
        expect([err.code, err.reason], what).toEqual(['unauthorized', reason]);
        expect(err.message, what).toContain(`${s.provider} signature verification failed`);
        for (const secret of s.secrets) expect(err.message).not.toContain(secret);
      }
      // Give a wrongly enqueued record time to show up before counting.
      await new Promise((r) => setTimeout(r, 300));
      expect(carrying(idOf(body))).toBe(0);
    });

    // Stripe and Standard Webhooks / Svix sign a timestamp; GitHub, Shopify and Hookdeck do not.
    if (s.timestamped)
      it('refuses a timestamp older than the tolerance (stale_timestamp)', async () => {
        const body = event();
        const res = await post(script, body, await s.sign(body, s.secrets[1], now() - 3600));
        expect(res.status).toBe(401);
        expect(((await res.json()) as { error: { reason: string } }).error.reason).toBe('stale_timestamp');
      });
  });

  it('refuses every request when none of the named secrets is set (never unchecked)', async () => {
    const shopify = SIGNERS.find((s) => s.provider === 'shopify')!;
    const saved = [process.env.SHOPIFY_SECRET, process.env.SHOPIFY_SECRET_OLD];
    delete process.env.SHOPIFY_SECRET;
    delete process.env.SHOPIFY_SECRET_OLD;
    try {
      const body = '{"id":"x"}';
      const res = await post('verify-shopify', body, await shopify.sign(body, shopify.secrets[1], now()));
      expect(res.status).toBe(401);
      expect(((await res.json()) as { error: { reason: string } }).error.reason).toBe('no_secret');
    } finally {
      [process.env.SHOPIFY_SECRET, process.env.SHOPIFY_SECRET_OLD] = saved;
    }
  });

  it('checks Basic auth: bcrypt users of name.passwd, plaintext users of basic_auth_secret', async () => {
    const basic = (cred: string) => ({ authorization: `Basic ${Buffer.from(cred).toString('base64')}` });
    expect((await post('locked', '{}')).status).toBe(401);
    expect((await post('locked', '{}', basic('ops:wrong'))).status).toBe(401);
    expect((await post('locked', '{"ok":1}', basic('ops:l0cked-pass'))).status).toBe(200);
    expect((await post('basic', '{}', basic('ops:wrong'))).status).toBe(401);
    expect((await post('basic', '{"ok":1}', basic('ops:s3cret'))).status).toBe(200);
    // The secret's users are read per request: a rotated value applies at once.
    process.env.INCOMING_BASIC = 'ops:rotated';
    try {
      expect((await post('basic', '{}', basic('ops:s3cret'))).status).toBe(401);
      expect((await post('basic', '{"ok":2}', basic('ops:rotated'))).status).toBe(200);
      delete process.env.INCOMING_BASIC;
      const unset = await post('basic', '{}', basic('ops:rotated'));
      expect(unset.status).toBe(401);
    } finally {
      process.env.INCOMING_BASIC = ENV.INCOMING_BASIC;
    }
  });

  it('refuses to load a name.json with the old http_allow key or an unknown key, naming the key', async () => {
    expect((await post('old-key', '{}')).status).toBe(404);
    expect((await post('typo', '{}')).status).toBe(404);
    const skipped = logs.filter((l) => l.includes('transformer skipped')).join('\n');
    expect(skipped).toContain('http_allow was renamed allowed_hosts');
    expect(skipped).toContain('unknown key _delivery_header');
  });
});
