import { describe, expect, it } from 'vitest';
import { baseInput, deliver, logsOf } from './helpers';

describe('delivery script', () => {
  it('an empty script changes nothing: same bytes, same headers', async () => {
    const r = await deliver('');
    expect(r).toMatchObject({ body: baseInput.payload, body_changed: false, headers: { 'x-custom': 'a' }, retry_on_status: undefined, ignored_headers: [] });
  });

  it('reading the payload does not re-serialize the body', async () => {
    const payload = '{ "amount" : 1.50, "b":  [ 1 ,2 ] }';
    const r = await deliver(`local p = request.payload; log.info(tostring(p.amount + p.b[2]))`, { input: { payload } });
    expect(r.body).toBe(payload);
    expect(r.body_changed).toBe(false);
  });

  it('rewrites the body by assigning a string', async () => {
    const r = await deliver(`request.body = json.encode({wrapped = request.payload.event})`);
    expect(r.body).toBe('{"wrapped":"order.completed"}');
    expect(r.body_changed).toBe(true);
  });

  it('a modified payload table becomes the new body', async () => {
    const r = await deliver(`request.payload.amount = request.payload.amount * 2; request.payload.extra = {ok = true}`);
    expect(JSON.parse(r.body)).toEqual({ event: 'order.completed', amount: 2000, items: [1, 2], note: null, extra: { ok: true } });
    expect(r.body_changed).toBe(true);
  });

  it('an explicit body wins over a modified payload', async () => {
    const r = await deliver(`request.payload.amount = 1; request.body = '{"x":1}'`);
    expect(r.body).toBe('{"x":1}');
  });

  it('sets and removes headers, case-insensitively', async () => {
    const r = await deliver(`
      request.headers['X-Signature-Extra'] = crypto.hmac_sha256('k', request.body)
      request.headers['x-custom'] = nil
      request.headers['Content-Type'] = 'application/vnd.custom+json'
      log.info(tostring(request.headers['CONTENT-TYPE']))`);
    expect(Object.keys(r.headers).sort()).toEqual(['content-type', 'x-signature-extra']);
    expect(r.headers['content-type']).toBe('application/vnd.custom+json');
  });

  it('cannot set the signature, webhook identity or framing headers', async () => {
    const r = await deliver(
      `request.headers['Webhook-Signature'] = 'v1,forged' request.headers['X-Webhook-Attempt'] = '1' request.headers['Host'] = 'evil' request.headers['X-Ok'] = '1'`,
    );
    expect(r.headers).toEqual({ 'x-custom': 'a', 'x-ok': '1' });
    expect(r.ignored_headers.sort()).toEqual(['host', 'webhook-signature', 'x-webhook-attempt']);
  });

  it('drops hop-by-hop headers the HTTP client manages (Expect, Keep-Alive, Upgrade, TE, ...)', async () => {
    const r = await deliver(
      `request.headers['Expect'] = '100-continue' request.headers['Keep-Alive'] = 'timeout=5' request.headers['Upgrade'] = 'h2c' request.headers['TE'] = 'trailers' request.headers['Connection'] = 'close' request.headers['X-Ok'] = '1'`,
    );
    expect(r.headers).toEqual({ 'x-custom': 'a', 'x-ok': '1' });
    expect(r.ignored_headers.sort()).toEqual(['connection', 'expect', 'keep-alive', 'te', 'upgrade']);
  });

  it('refuses header values the HTTP client cannot send (a € or a control character)', async () => {
    await expect(deliver(`request.headers['x-price'] = '5 €'`)).rejects.toThrow(/x-price: .*not one byte/);
    await expect(deliver(`request.headers['x-a'] = 'a\\1b'`)).rejects.toThrow(/control character U\+0001/);
    await expect(deliver(`request.headers['x-a'] = 'a\\127b'`)).rejects.toThrow(/control character U\+007F/);
  });

  it('adds retry_on_status', async () => {
    expect((await deliver(`request.retry_on_status = {409, 423, 409}`)).retry_on_status).toEqual([409, 423]);
    const r = await deliver(`table.insert(request.retry_on_status, 410)`, { input: { retry_on_status: [409] } });
    expect(r.retry_on_status).toEqual([409, 410]);
    await expect(deliver(`request.retry_on_status = {'x'}`)).rejects.toMatchObject({ code: 'script_runtime_error' });
    await expect(deliver(`request.retry_on_status = {700}`)).rejects.toThrow(/not an HTTP status/);
  });

  it('sees the webhook read-only: endpoint and attempt cannot be changed', async () => {
    expect(await logsOf(`print(webhook.id, webhook.config_id, webhook.endpoint, webhook.attempt, webhook.max_attempts)`)).toEqual([
      'wh_01TEST\tcfg_a\thttps://example.com/hook\t0\t5',
    ]);
    await expect(deliver(`webhook.endpoint = 'https://evil.example/'`)).rejects.toThrow(/webhook is read-only/);
    // Fields the result has no room for are simply not read back.
    const r = await deliver(`request.endpoint = 'https://evil.example/' request.max_attempts = 1000 request.url = 'x'`);
    expect(Object.keys(r).sort()).toEqual(['body', 'body_changed', 'cpu_ms', 'headers', 'ignored_headers', 'retry_on_status']);
  });

  it('bad results are script_runtime_error', async () => {
    await expect(deliver(`request.body = 42`)).rejects.toThrow(/request.body must be a string/);
    await expect(deliver(`request.headers['bad name'] = 'x'`)).rejects.toThrow(/invalid header name/);
    await expect(deliver(`request.headers['x-a'] = 'a\\r\\nb: c'`)).rejects.toThrow(/control character U\+000D/);
    await expect(deliver(`request = 'gone'`)).rejects.toThrow(/request must remain a table/);
  });

  it('uses kv to drop duplicates (HOWK-style dedupe)', async () => {
    const data = new Map<string, string>();
    const kv = { get: async (k: string) => data.get(k) ?? null, set: async (k: string, v: string) => void data.set(k, v), del: async (k: string) => void data.delete(k) };
    const script = `
      local key = 'seen:' .. crypto.sha256(request.body)
      if kv.get(key) then request.headers['X-Duplicate'] = '1' else kv.set(key, '1', 3600) end`;
    expect((await deliver(script, { services: { kv } })).headers['x-duplicate']).toBeUndefined();
    expect((await deliver(script, { services: { kv } })).headers['x-duplicate']).toBe('1');
  });
});
