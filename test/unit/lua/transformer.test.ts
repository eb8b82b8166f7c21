import { describe, expect, it } from 'vitest';
import { runTransformer, type TransformerInput, type TransformerOptions } from '../../../core/lua/transformer';
import { engine } from './helpers';

const inbound: TransformerInput = {
  body: '{"type":"charge.succeeded","amount":1000,"customer":"cus_1"}',
  headers: { 'Content-Type': 'application/json', 'Stripe-Signature': 't=1,v1=abc' },
  query: { source: 'stripe', tag: ['a', 'b'] },
  script: 'stripe-router',
};
const transform = (code: string, opts: TransformerOptions = {}, input: Partial<TransformerInput> = {}) => runTransformer(code, { ...inbound, ...input }, { engine, ...opts });

describe('transformer', () => {
  it('fans one request out to N webhooks, in order', async () => {
    const { webhooks } = await transform(`
      local p = request.payload
      if p.type == 'charge.succeeded' then
        howk.post('https://billing.internal/webhook', {amount = p.amount, customer = p.customer})
        howk.post('https://analytics.internal/track', request.body, {headers = {['X-Source'] = request.query.source}, idempotency_key = 'evt-1'})
      end`);
    expect(webhooks).toEqual([
      { endpoint: 'https://billing.internal/webhook', payload: expect.any(String), headers: {} },
      { endpoint: 'https://analytics.internal/track', payload: inbound.body, headers: { 'x-source': 'stripe' }, idempotency_key: 'evt-1' },
    ]);
    expect(JSON.parse(webhooks[0]!.payload)).toEqual({ amount: 1000, customer: 'cus_1' });
  });

  it('writes a table as JSON with its keys in one order, whatever the Lua state (the text a signature and an idempotency key cover)', async () => {
    const code = `howk.post('https://x.internal/', {zeta = 1, alpha = 2, mike = 3, bravo = {yankee = 4, charlie = 5}, kilo = 6, echo = 7, golf = 8, delta = 9})`;
    const texts = await Promise.all([1, 2, 3].map(async () => (await transform(code)).webhooks[0]!.payload));
    expect(texts).toEqual(Array(3).fill('{"alpha":2,"bravo":{"charlie":5,"yankee":4},"delta":9,"echo":7,"golf":8,"kilo":6,"mike":3,"zeta":1}'));
  });

  it('sees method, path, query (repeated keys as a list) and case-insensitive headers', async () => {
    const { webhooks } = await transform(
      `howk.post('https://x.internal/', {m = request.method, p = request.path, t = request.query.tag, s = request.headers['stripe-signature'], s2 = request.headers['Stripe-Signature']})`,
      {},
      { method: 'POST', path: '/incoming/stripe-router' },
    );
    expect(JSON.parse(webhooks[0]!.payload)).toEqual({ m: 'POST', p: '/incoming/stripe-router', t: ['a', 'b'], s: 't=1,v1=abc', s2: 't=1,v1=abc' });
  });

  it('is all or nothing: an error after 5 posts returns nothing to enqueue', async () => {
    const run = transform(`for i = 1, 5 do assert(howk.post('https://a.internal/' .. i, {i = i})) end error('boom after five')`);
    await expect(run).rejects.toMatchObject({ code: 'script_runtime_error', message: expect.stringMatching(/boom after five/) });
    // The same holds for a timeout after posting.
    await expect(transform(`howk.post('https://a.internal/', {}) while true do end`, { limits: { timeoutMs: 50 } })).rejects.toMatchObject({ code: 'script_timeout' });
  });

  it('respects the allowed-domains list', async () => {
    const logs: string[] = [];
    const { webhooks } = await transform(
      `print(howk.post('https://evil.example/steal', {}))
       assert(howk.post('https://hooks.partner.com/x', {}))
       assert(howk.post('https://billing.internal/x', {}))
       print(howk.post('https://partner.com.evil.example/', {}))`,
      { allowedDomains: ['*.partner.com', 'billing.internal'], services: { log: (_l, m) => logs.push(m) } },
    );
    expect(webhooks.map((w) => w.endpoint)).toEqual(['https://hooks.partner.com/x', 'https://billing.internal/x']);
    expect(logs).toEqual(['nil\thowk.post: endpoint domain not allowed: evil.example', 'nil\thowk.post: endpoint domain not allowed: partner.com.evil.example']);
  });

  it('validates each post: URL, JSON text, options, reserved headers, limit', async () => {
    const lines: string[] = [];
    const log = { log: (_l: string, m: string) => lines.push(m) };
    await transform(
      `print(howk.post('not a url', {}))
       print(howk.post('ftp://x.internal/', {}))
       print(howk.post('https://x.internal/', 'not json'))
       print(howk.post('https://x.internal/'))
       print(howk.post('https://x.internal/', {}, {max_attempts = 0}))
       print(howk.post('https://x.internal/', {}, {headers = {['Webhook-Signature'] = 'x'}}))
       print(howk.post('https://x.internal/', {}, {headers = {['Expect'] = '100-continue'}}))
       print(howk.post('https://x.internal/', {}, {headers = {['Keep-Alive'] = 'timeout=5'}}))
       print(howk.post('https://x.internal/', {}, {headers = {['X-Price'] = '5 €'}}))
       print(howk.post('https://x.internal/', {}, {headers = {['X-A'] = 'a\\1'}}))`,
      { services: log },
    );
    expect(lines.map((l) => l.replace(/^nil\thowk\.post: /, ''))).toEqual([
      'invalid endpoint URL: not a url',
      'endpoint scheme not allowed: ftp:',
      'payload string is not valid JSON (pass a table to have it encoded)',
      'payload is required',
      'opts.max_attempts must be an integer between 1 and 1000',
      'opts.headers: webhook-signature is reserved',
      'opts.headers: expect is reserved',
      'opts.headers: keep-alive is reserved',
      'opts.headers.X-Price: header values may hold only tab, printable ASCII and bytes 0x80-0xFF (found U+20AC at index 2, which is not one byte)',
      'opts.headers.X-A: header values may hold only tab, printable ASCII and bytes 0x80-0xFF (found control character U+0001 at index 1)',
    ]);
    const r = await transform(`for i = 1, 5 do howk.post('https://x.internal/', {i = i}) end`, { maxWebhooks: 3 });
    expect(r.webhooks).toHaveLength(3);
    await expect(transform(`for i = 1, 5 do assert(howk.post('https://x.internal/', {i = i})) end`, { maxWebhooks: 3 })).rejects.toThrow(/too many webhooks \(limit 3\)/);
  });

  it('howk.post is not available to delivery scripts', async () => {
    const { deliver } = await import('./helpers');
    await expect(deliver(`howk.post('https://x.internal/', {})`)).rejects.toThrow(/attempt to index a nil value \(global 'howk'\)/);
  });
});
