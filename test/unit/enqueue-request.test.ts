import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../core/config/load';
import { ValidationError } from '../../core/errors/errors';
import { parseBatchBody, parseEnqueueBody, type EnqueueLimits } from '../../core/domain/enqueue';
import { validationError } from '../helpers/validation-error';

const L: EnqueueLimits = loadConfig().api; // max_batch_size 100, max_endpoint_length 2048, max_headers 50, ...
const EP = 'https://example.com/hooks/1';

/** The field and every issue path, to check that the error names the problem. */
const named = (e: ValidationError): string[] => [e.field ?? '', ...e.issues.map((i) => i.path)];
/** Expects the error to name `field` or a key inside it. */
const expectNamed = (e: ValidationError, field: string) =>
  expect(
    named(e).some((n) => n === field || n.startsWith(`${field}.`)),
    `${JSON.stringify(named(e))} names ${field}`,
  ).toBe(true);

const body = (fields: Record<string, unknown>, payloadText = '{"a":1}') => {
  const json = JSON.stringify(fields);
  return `${json.slice(0, -1)}${json.length > 2 ? ',' : ''}"payload":${payloadText}}`;
};

describe('parseEnqueueBody: valid bodies', () => {
  it('returns the item with the payload text exactly as sent', () => {
    const payload = '{ "amount" : 1.0, "n": 12345678901234567890123, "e": 1e2, "s": "caf\\u00e9 日本", "t": "}]\\"\\\\" }';
    const item = parseEnqueueBody(
      body({ endpoint: EP, headers: { 'X-Tenant': 'acme' }, idempotency_key: 'order-1', signing_secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', max_attempts: 5 }, payload),
      L,
    );
    expect(item).toEqual({
      endpoint: EP,
      payload,
      headers: { 'X-Tenant': 'acme' },
      idempotency_key: 'order-1',
      signing_secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
      max_attempts: 5,
    });
  });

  it.each(['"a string"', '-1.50', 'null', 'false', '[1, 2.0, "3"]', '{}', '[]'])('accepts the payload %s as is', (payload) => {
    expect(parseEnqueueBody(body({ endpoint: EP }, payload), L).payload).toBe(payload);
  });

  it('keeps the payload text when the payload comes first and whitespace surrounds everything', () => {
    const text = `\n\t{ "payload" :\n [ 1.0 ,{"x":"]"}] ,\r\n "endpoint" : "${EP}" }\n`;
    const item = parseEnqueueBody(text, L);
    expect(item.payload).toBe('[ 1.0 ,{"x":"]"}]');
    expect(item.headers).toEqual({});
    expect(item.idempotency_key).toBeUndefined();
  });

  it('takes the last duplicate payload, as JSON.parse does', () => {
    expect(parseEnqueueBody(`{"endpoint":"${EP}","payload":1,"payload":{ "second" : true }}`, L).payload).toBe('{ "second" : true }');
  });

  it.each(['http://example.com', 'https://example.com:8443/a/b?c=d#e', 'HTTPS://EXAMPLE.COM/x', 'http://127.0.0.1:9/x', 'http://[::1]/x'])(
    'accepts the endpoint %s',
    (endpoint) => {
      expect(parseEnqueueBody(body({ endpoint }), L).endpoint).toBe(endpoint);
    },
  );

  it('accepts the limits exactly: endpoint length, header count, header value length, idempotency key length', () => {
    const endpoint = `https://example.com/${'a'.repeat(L.max_endpoint_length - 'https://example.com/'.length)}`;
    expect(endpoint).toHaveLength(L.max_endpoint_length);
    const headers = Object.fromEntries(Array.from({ length: L.max_headers }, (_, i) => [`X-H${i}`, i === 0 ? 'v'.repeat(L.max_header_value_length) : 'v']));
    const item = parseEnqueueBody(body({ endpoint, headers, idempotency_key: 'k'.repeat(L.max_idempotency_key_length) }), L);
    expect(Object.keys(item.headers)).toHaveLength(L.max_headers);
  });
});

describe('parseEnqueueBody: an endpoint accepted before', () => {
  it('is still held to the limits it is checked against', () => {
    const endpoint = 'https://example.com/hooks/remembered';
    expect(parseEnqueueBody(body({ endpoint }), L).endpoint).toBe(endpoint);
    const e = validationError(() => parseEnqueueBody(body({ endpoint }), { ...L, max_endpoint_length: 20 }));
    expect(e.field).toBe('endpoint');
    expect(e.message).toBe('endpoint: endpoint is longer than 20 characters');
  });

  it('gets the same answer for the same item with or without headers, an unknown field or a signing secret', () => {
    const plain = parseEnqueueBody(body({ endpoint: EP, idempotency_key: 'k', max_attempts: 3 }), L);
    expect(plain).toEqual({ endpoint: EP, payload: '{"a":1}', headers: {}, idempotency_key: 'k', signing_secret: undefined, max_attempts: 3 });
    expect(parseEnqueueBody(body({ endpoint: EP, idempotency_key: 'k', max_attempts: 3, headers: {} }), L)).toEqual(plain);
    expect(parseEnqueueBody(body({ endpoint: EP, idempotency_key: 'k', max_attempts: 3, note: 'ignored' }), L)).toEqual(plain);
  });
});

describe('parseEnqueueBody: invalid bodies name the problem', () => {
  it.each([
    ['not JSON', '{"endpoint":', 'body'],
    ['a JSON array', `[{"endpoint":"${EP}","payload":1}]`, 'body'],
    ['a JSON string', '"hello"', 'body'],
    ['JSON null', 'null', 'body'],
    ['no endpoint', '{"payload":{"a":1}}', 'endpoint'],
    ['a non-string endpoint', '{"endpoint":42,"payload":1}', 'endpoint'],
    ['no payload', `{"endpoint":"${EP}"}`, 'payload'],
    ['an ftp: endpoint', body({ endpoint: 'ftp://example.com/x' }), 'endpoint'],
    ['a javascript: endpoint', body({ endpoint: 'javascript:alert(1)' }), 'endpoint'],
    ['a file: endpoint', body({ endpoint: 'file:///etc/passwd' }), 'endpoint'],
    ['a relative endpoint', body({ endpoint: '/hooks/1' }), 'endpoint'],
    ['an endpoint without a scheme', body({ endpoint: 'example.com/hooks' }), 'endpoint'],
    ['an empty endpoint', body({ endpoint: '' }), 'endpoint'],
    ['an oversized endpoint', body({ endpoint: `https://example.com/${'a'.repeat(L.max_endpoint_length)}` }), 'endpoint'],
    ['too many headers', body({ endpoint: EP, headers: Object.fromEntries(Array.from({ length: L.max_headers + 1 }, (_, i) => [`X-H${i}`, 'v'])) }), 'headers'],
    ['a Content-Length header', body({ endpoint: EP, headers: { 'Content-Length': '5' } }), 'headers'],
    ['a webhook-signature header', body({ endpoint: EP, headers: { 'webhook-signature': 'v1,forged' } }), 'headers'],
    ['an X-Webhook-Attempt header', body({ endpoint: EP, headers: { 'X-WEBHOOK-ATTEMPT': '9' } }), 'headers'],
    ['a Host header', body({ endpoint: EP, headers: { host: 'evil.example' } }), 'headers'],
    ['CRLF in a header value', body({ endpoint: EP, headers: { 'X-A': 'ok\r\nInjected: yes' } }), 'headers.X-A'],
    ['LF in a header value', body({ endpoint: EP, headers: { 'X-A': 'ok\nx' } }), 'headers.X-A'],
    ['NUL in a header value', body({ endpoint: EP, headers: { 'X-A': 'ok\u0000x' } }), 'headers.X-A'],
    ['an oversized header value', body({ endpoint: EP, headers: { 'X-A': 'v'.repeat(L.max_header_value_length + 1) } }), 'headers.X-A'],
    ['a header name that is not a token', body({ endpoint: EP, headers: { 'Bad Name': 'v' } }), 'headers'],
    ['a non-string header value', body({ endpoint: EP, headers: { 'X-A': 5 } }), 'headers.X-A'],
    ['an empty idempotency_key', body({ endpoint: EP, idempotency_key: '' }), 'idempotency_key'],
    ['an oversized idempotency_key', body({ endpoint: EP, idempotency_key: 'k'.repeat(L.max_idempotency_key_length + 1) }), 'idempotency_key'],
    ['a short signing_secret', body({ endpoint: EP, signing_secret: 'short' }), 'signing_secret'],
    ['a whsec_ secret of 1 byte', body({ endpoint: EP, signing_secret: 'whsec_AAAAAAAA' }), 'signing_secret'],
    ['a whsec_ secret that is not base64', body({ endpoint: EP, signing_secret: 'whsec_!!!!!!!!!!!!!!!!!!!!!!!!' }), 'signing_secret'],
    ['an Expect header', body({ endpoint: EP, headers: { Expect: '100-continue' } }), 'headers.Expect'],
    ['a Keep-Alive header', body({ endpoint: EP, headers: { 'Keep-Alive': 'timeout=5' } }), 'headers.Keep-Alive'],
    ['an Upgrade header', body({ endpoint: EP, headers: { Upgrade: 'websocket' } }), 'headers.Upgrade'],
    ['a TE header', body({ endpoint: EP, headers: { te: 'trailers' } }), 'headers.te'],
    ['a € in a header value', body({ endpoint: EP, headers: { 'X-Price': '5 €' } }), 'headers.X-Price'],
    ['a \\x01 in a header value', body({ endpoint: EP, headers: { 'X-A': 'a\u0001b' } }), 'headers.X-A'],
    ['a \\x7f in a header value', body({ endpoint: EP, headers: { 'X-A': 'a\u007fb' } }), 'headers.X-A'],
    ['max_attempts 0', body({ endpoint: EP, max_attempts: 0 }), 'max_attempts'],
    ['max_attempts 1.5', body({ endpoint: EP, max_attempts: 1.5 }), 'max_attempts'],
    ['max_attempts 1001', body({ endpoint: EP, max_attempts: 1001 }), 'max_attempts'],
    ['max_attempts as a string', body({ endpoint: EP, max_attempts: '3' }), 'max_attempts'],
    ['a numeric idempotency_key', body({ endpoint: EP, idempotency_key: 7 }), 'idempotency_key'],
    ['null headers', body({ endpoint: EP, headers: null }), 'headers'],
    ['headers as an array', body({ endpoint: EP, headers: [] }), 'headers'],
    ['a later duplicate endpoint that is invalid', `{"endpoint":"${EP}","payload":1,"endpoint":"ftp://x"}`, 'endpoint'],
  ])('%s → %s', (_name, text, field) => {
    const e = validationError(() => parseEnqueueBody(text, L));
    expectNamed(e, field);
    expect(e.code).toBe('invalid_request');
  });
});

const item = (n: number, payload = `{"n":${n}}`) => `{"endpoint":"${EP}/${n}","payload":${payload}}`;

describe('parseEnqueueBody: reserved headers', () => {
  it.each([
    ['Content-Type', 'application/xml', 'Content-Type is set by Howk and cannot be given'],
    ['Webhook-Signature', 'v1,forged', 'Webhook-Signature is set by Howk and cannot be given'],
    ['x-webhook-id', 'a\u0001b', 'x-webhook-id is set by Howk and cannot be given'],
    ['Host', 'evil.example', 'Host is managed by the HTTP client and cannot be set'],
    ['content-length', '5', 'content-length is managed by the HTTP client and cannot be set'],
  ])('refuses %s, saying who sets it', (name, value, message) => {
    const e = validationError(() => parseEnqueueBody(body({ endpoint: EP, headers: { [name]: value } }), L));
    expect(e.issues).toEqual([{ path: `headers.${name}`, message }]);
    expect(e.field).toBe(`headers.${name}`);
    expect(e.message).toBe(`headers.${name}: ${message}`);
  });
});

describe('parseBatchBody', () => {
  it('returns every item with its own payload text', () => {
    const text = `{ "webhooks" : [ ${item(0, '{ "a" : 1.0 }')} ,\n ${item(1, '"]},{"')}, ${item(2, '12345678901234567890123')} ] }`;
    const items = parseBatchBody(text, L);
    expect(items.map((i) => i.payload)).toEqual(['{ "a" : 1.0 }', '"]},{"', '12345678901234567890123']);
    expect(items.map((i) => i.endpoint)).toEqual([`${EP}/0`, `${EP}/1`, `${EP}/2`]);
  });

  it('accepts exactly max_batch_size (100) items', () => {
    expect(L.max_batch_size).toBe(100);
    const text = `{"webhooks":[${Array.from({ length: 100 }, (_, i) => item(i)).join(',')}]}`;
    const items = parseBatchBody(text, L);
    expect(items).toHaveLength(100);
    expect(items[99]!.payload).toBe('{"n":99}');
  });

  it.each([
    ['an empty batch', '{"webhooks":[]}', 'webhooks'],
    ['101 items', `{"webhooks":[${Array.from({ length: 101 }, (_, i) => item(i)).join(',')}]}`, 'webhooks'],
    ['no webhooks key', `{"items":[${item(0)}]}`, 'webhooks'],
    ['webhooks that is not an array', `{"webhooks":${item(0)}}`, 'webhooks'],
    ['a body that is an array', `[${item(0)}]`, 'webhooks'],
    ['not JSON', '{"webhooks":[', 'body'],
    ['a number item', `{"webhooks":[${item(0)},42]}`, 'webhooks.1'],
    ['a null item', `{"webhooks":[${item(0)},null]}`, 'webhooks.1'],
    ['an array item', `{"webhooks":[${item(0)},[${item(1)}]]}`, 'webhooks.1'],
    ['an item without an endpoint', `{"webhooks":[${item(0)},{"payload":1}]}`, 'webhooks.1.endpoint'],
    ['an item with a forbidden header', `{"webhooks":[{"endpoint":"${EP}","payload":1,"headers":{"Webhook-Signature":"x"}}]}`, 'webhooks.0.headers'],
    [
      'an item with an Expect header',
      `{"webhooks":[${item(0)},${item(1)},${item(2)},{"endpoint":"${EP}","payload":1,"headers":{"x":"ok","Expect":"100-continue"}}]}`,
      'webhooks.3.headers.Expect',
    ],
    ['an item with a € in a header value', `{"webhooks":[${item(0)},${item(1)},${item(2)},{"endpoint":"${EP}","payload":1,"headers":{"x":"\u20ac"}}]}`, 'webhooks.3.headers.x'],
    ['an item with a 1-byte whsec_ secret', `{"webhooks":[${item(0)},{"endpoint":"${EP}","payload":1,"signing_secret":"whsec_AAAAAAAA"}]}`, 'webhooks.1.signing_secret'],
    ['an item without a payload', `{"webhooks":[${item(0)},${item(1)},{"endpoint":"${EP}"}]}`, 'webhooks.2.payload'],
  ])('%s → %s', (_name, text, field) => {
    const e = validationError(() => parseBatchBody(text, L));
    expectNamed(e, field);
  });

  it('reports the problems of every bad item, and rejects the whole batch', () => {
    const text = `{"webhooks":[${item(0)},7,{"endpoint":"ftp://x","payload":1},${item(3)},{"endpoint":"${EP}"}]}`;
    const e = validationError(() => parseBatchBody(text, L));
    expect(e.issues.map((i) => i.path)).toEqual(['webhooks.1', 'webhooks.2.endpoint', 'webhooks.4.payload']);
    expect(e.field).toBe('webhooks.1');
  });

  it('honours a smaller max_batch_size', () => {
    const e = validationError(() => parseBatchBody(`{"webhooks":[${item(0)},${item(1)},${item(2)}]}`, { ...L, max_batch_size: 2 }));
    expect(e.field).toBe('webhooks');
    expect(e.message).toContain('2');
  });
});
