import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../core/ports/logger';
import { runCredentials } from '../../workers/cli/credentials';
import { waitFor } from '../helpers/env';
import { startTestFleet, type TestFleet } from '../helpers/fleet';
import { redisLeaks, topicLeaks } from '../helpers/leak-scan';
import { startReceiver, type Receiver } from '../helpers/receiver';
import { useRedisDb } from '../helpers/redis-db';

// crypto.decrypt_credential end to end on real Kafka + Redis (a db of its own): a key made by
// `howk credentials new-key`, a credential encrypted by `howk credentials encrypt`, used by a
// delivery script in the worker and by the script test route in the api. Neither the key nor
// the plaintext reaches a topic, Redis, a log line or the test route's answer.

const PLAINTEXT = 'partner-token-3f9a61c0d2';
const redisDb = useRedisDb();

const cli = async (argv: string[], stdin = '', env: Record<string, string> = {}) => {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCredentials(argv, { out: (s) => out.push(s), err: (s) => err.push(s) }, async () => stdin, env);
  return { code, out: out.join('\n'), err: err.join('\n') };
};

describe('Lua crypto.decrypt_credential in the fleet (kafka)', () => {
  let f: TestFleet;
  let rx: Receiver;
  let key: string;
  const logs: string[] = [];
  beforeAll(async () => {
    key = (await cli(['new-key'])).out;
    expect(Buffer.from(key, 'base64')).toHaveLength(32);
    const enc = await cli(['encrypt', '--name', 'partner', '--key-id', 'IT1', '--namespaces', 'cred', '--hosts', '127.0.0.1'], `${PLAINTEXT}\n`, { HOWK_LUA_CRYPTO_IT1: key });
    expect(enc.code).toBe(0);
    expect(enc.out).toMatch(/^lcred:v2:IT1:/);
    expect(enc.out).not.toContain(PLAINTEXT);
    // An envelope under a key id this fleet does not have.
    const other = await cli(['encrypt', '--name', 'orphan', '--key-id', 'GONE', '--namespaces', '*', '--hosts', '127.0.0.1'], 'x', {
      HOWK_LUA_CRYPTO_GONE: Buffer.alloc(32, 3).toString('base64'),
    });
    // The fleet reads HOWK_LUA_CRYPTO_* from its environment (this test file's own process).
    process.env.HOWK_LUA_CRYPTO_IT1 = key;
    rx = await startReceiver();
    f = await startTestFleet('kafka', {
      redisDb: redisDb(),
      log: createLogger('test', 'debug', (l) => logs.push(l)),
      overrides: { 'lua.credentials': { partner: enc.out, orphan: other.out } },
    });
  });
  afterAll(async () => {
    await f?.stop();
    await rx?.close();
    delete process.env.HOWK_LUA_CRYPTO_IT1;
  });

  it('the CLI refuses bad usage and a missing key', async () => {
    const scoped = ['--namespaces', 'wh', '--hosts', 'api.example.com'];
    expect((await cli(['encrypt', '--name', 'x'])).code).toBe(2);
    // A credential without a scope cannot be made.
    expect((await cli(['encrypt', '--name', 'x', '--key-id', 'K'], 'v', { HOWK_LUA_CRYPTO_K: key })).code).toBe(2);
    await expect(cli(['encrypt', '--name', 'x', '--key-id', 'K', '--namespaces', 'wh', '--hosts', 'https://x/'], 'v', { HOWK_LUA_CRYPTO_K: key })).rejects.toThrow(/invalid host/);
    await expect(cli(['encrypt', '--name', 'x', '--key-id', 'NOPE', ...scoped], 'v')).rejects.toThrow('HOWK_LUA_CRYPTO_NOPE is not set');
    await expect(cli(['encrypt', '--name', 'x', '--key-id', 'K', ...scoped], '\n', { HOWK_LUA_CRYPTO_K: key })).rejects.toThrow(/nothing to encrypt/);
  });

  it('a delivery script in the worker decrypts the credential into a header', async () => {
    const script = `
      local token, err = crypto.decrypt_credential('partner')
      if not token then error(err) end
      request.headers['Authorization'] = 'Bearer ' .. token
      local _, e1 = crypto.decrypt_credential('nope')
      local _, e2 = crypto.decrypt_credential('orphan')
      request.headers['X-E1'] = e1
      request.headers['X-E2'] = e2
      log.info('credential used', { length = #token })`;
    expect((await fetch(`${f.baseUrl}/config/cred/script`, { method: 'PUT', body: script })).status).toBe(200);
    // The script reaches the worker through howk.scripts: retry until a delivery carries it.
    let n = 0;
    const got = await waitFor(
      async () => {
        const path = `/cred-${++n}`;
        expect((await f.post('/webhooks/cred/enqueue', { endpoint: rx.url(path), payload: { n } })).status).toBe(202);
        const r = await waitFor(() => rx.received.find((x) => x.path === path), { what: path });
        return r.headers.authorization ? r : undefined;
      },
      { what: 'a delivery with the script applied', intervalMs: 200 },
    );
    expect(got.headers.authorization).toBe(`Bearer ${PLAINTEXT}`);
    expect(got.headers['x-e1']).toBe('unknown credential: nope');
    expect(got.headers['x-e2']).toBe('credential orphan needs key GONE (HOWK_LUA_CRYPTO_GONE is not set)');
  });

  it('the script test route in the api decrypts it too, and shows no plaintext', async () => {
    const res = await f.post('/config/cred/script/test', {
      payload: {},
      script: `local t = assert(crypto.decrypt_credential('partner'))\nrequest.headers['x-len'] = #t\nrequest.headers['x-token'] = t`,
    });
    expect(res.status).toBe(200);
    const b = (await res.json()) as any;
    expect(b.request.headers['x-len']).toBe(String(PLAINTEXT.length));
    expect(b.request.headers['x-token']).toBe('[redacted]');
    expect(b.credentials_used).toEqual(['partner']);
  });

  it('neither the key nor the plaintext is on any topic, in Redis or in the logs', async () => {
    // Results and state records of the deliveries above are produced before the batch commits.
    await waitFor(() => f.records('results').length >= 1, { what: 'results' });
    expect(logs.some((l) => l.includes('credential used'))).toBe(true);
    // The scans do see what is there: the endpoint of the first delivery is in both.
    expect(topicLeaks(f, '/cred-1').length).toBeGreaterThan(0);
    expect((await redisLeaks(redisDb(), '/cred-1')).found.length).toBeGreaterThan(0);
    for (const needle of [PLAINTEXT, key]) {
      expect(topicLeaks(f, needle)).toEqual([]);
      const redis = await redisLeaks(redisDb(), needle);
      expect(redis.keys).toBeGreaterThan(0);
      expect(redis.found).toEqual([]);
      expect(logs.filter((l) => l.includes(needle))).toEqual([]);
    }
  });
});
