import { describe, expect, it } from 'vitest';
import { arrayElements, objectMembers, skipValue, slice } from '../../core/domain/raw-json';
import { decodeWebhook, encodeWebhook, WebhookSchema, type Webhook } from '../../core/records/webhook';

// Body bytes (docs/ARCHITECTURE.md, The life of one webhook): the payload text fixed at
// enqueue is the text signed and sent on every attempt, so the record codec must carry it
// byte for byte.

const base = (payload: string, extra: Partial<Webhook> = {}): Webhook => ({
  id: 'wh_01JABCDEFGHJKMNPQRSTVWXYZ0',
  config_id: 'cfg-1',
  endpoint: 'https://example.com/hook',
  endpoint_hash: '0123456789abcdef0123456789abcdef',
  payload,
  headers: { 'X-Tenant': 'acme' },
  attempt: 2,
  max_attempts: 20,
  deferrals: 1,
  created_at: '2025-01-01T00:00:00.000Z',
  scheduled_at: '2025-01-01T00:00:10.000Z',
  ...extra,
});

// Each one is valid JSON whose JSON.parse → JSON.stringify round trip would change the text.
const PAYLOADS: [string, string][] = [
  ['whitespace and key order', '{ "b" : 1 ,\n\t"a" : [ 1 , 2 ]\r\n}'],
  ['1.0 and 1e2', '{"x":1.0,"y":1e2,"z":-0.50E-3}'],
  ['a big integer', '{"n":12345678901234567890123}'],
  ['a bare big integer', '12345678901234567890123'],
  ['unicode escapes', '{"s":"caf\\u00e9 \\ud83c\\udf89","k\\u00e9y":1}'],
  ['raw non-ASCII', '{"s":"café 日本語 🎉","ключ":"значение"}'],
  ['strings holding } ] " and backslashes', '{"a":"}]","b":"\\"}","c":"\\\\","d":["\\\\\\"]}",{"e":"{[\\\\"}],"f":"end\\\\"}'],
  ['a string', '"just a string with } and ]"'],
  ['a string ending in an escaped backslash', '"C:\\\\"'],
  ['a number', '-42.000'],
  ['null', 'null'],
  ['true', 'true'],
  ['an array', '[1, "two", {"three": [3.0]}, null]'],
  ['an empty object', '{}'],
  ['an empty array', '[ ]'],
  ['an escaped solidus', '{"url":"https:\\/\\/example.com"}'],
];

describe('encodeWebhook / decodeWebhook', () => {
  it.each(PAYLOADS)('keeps the payload bytes of %s', (_name, payload) => {
    const w = base(payload);
    const text = encodeWebhook(w);
    // The record is valid JSON and carries the payload as JSON, not as a string.
    const parsed = JSON.parse(text) as Record<string, unknown>;
    expect(parsed.payload).toEqual(JSON.parse(payload));
    const back = decodeWebhook(text);
    expect(back.payload).toBe(payload);
    expect(back).toEqual(w);
  });

  it('keeps every other field through a round trip, optional ones included', () => {
    const w = base('{"a":1}', { idempotency_key: 'idem-1', signing_secret: 'enc:v1:k1:aaa:bbb', script_hash: 'abc', replay_of: 'wh_X' });
    expect(decodeWebhook(encodeWebhook(w))).toEqual(w);
  });

  it('reads a record written by another producer: any key order, whitespace, payload first', () => {
    const payload = '{ "amount" : 10.50 , "id" : 12345678901234567890 }';
    const text = `\n {  "payload" :  ${payload} ,
      "scheduled_at":"s","created_at":"c","max_attempts":3,"attempt":0,
      "endpoint_hash":"h","endpoint":"http://x.test/","config_id":"c1","id":"wh_1" }  `;
    const w = decodeWebhook(text);
    expect(w.payload).toBe(payload);
    expect(w).toMatchObject({ id: 'wh_1', config_id: 'c1', attempt: 0, max_attempts: 3, deferrals: 0, headers: {} });
  });

  it('ignores a nested "payload" key and strings that look like one', () => {
    const payload = '{"payload":"inner","x":"\\"payload\\":1"}';
    const text = `{"note":"\\"payload\\": 666","meta":{"payload":[1,2]},${encodeWebhook(base(payload)).slice(1)}`;
    expect(decodeWebhook(text).payload).toBe(payload);
  });

  // The worker reads well-formed records without zod: what it gets must be what zod gives
  // (fields, defaults, key order, since a retry re-encodes the webhook it read).
  it.each([
    [
      'every field',
      encodeWebhook(
        base('{"a":1}', {
          idempotency_key: 'i',
          signing_secret: 's',
          script_hash: 'h',
          replay_of: 'wh_R',
          released_by: ['d1', 'd2'],
          awaited_by: 'api-1',
          delivery_headers: { A: '${X}' },
          delivery_query_params: { q: '${Y}' },
          trace: '00-abc-def-01',
        }),
      ),
    ],
    [
      'the defaults left out',
      '{"id":"wh_1","config_id":"c","endpoint":"http://x.test","endpoint_hash":"h","attempt":0,"max_attempts":3,"created_at":"a","scheduled_at":"b","payload":1}',
    ],
    [
      'fields in another order',
      '{"scheduled_at":"b","payload":[1],"created_at":"a","max_attempts":3,"attempt":1,"deferrals":2,"headers":{"x":"y"},"endpoint_hash":"h","endpoint":"http://x.test","config_id":"c","id":"wh_1"}',
    ],
    ['an unknown field', encodeWebhook(base('1')).replace('"attempt":2', '"attempt":2,"extra":{"k":1}')],
    ['a big attempt count', encodeWebhook(base('1')).replace('"attempt":2', '"attempt":1e3')],
  ])('reads %s as zod does', (_name, text) => {
    const obj = { ...(JSON.parse(text) as Record<string, unknown>), payload: slice(text, objectMembers(text, 0).get('payload')!) };
    const expected = WebhookSchema.parse(obj);
    const got = decodeWebhook(text);
    expect(got).toEqual(expected);
    expect(Object.keys(got)).toEqual(Object.keys(expected));
    expect(encodeWebhook(got)).toBe(encodeWebhook(expected));
  });

  it('takes the last of duplicate payload keys, as JSON.parse does', () => {
    const text = encodeWebhook(base('{"first":true}')).replace(/}$/, ',"payload": [ "second" ] }');
    expect((JSON.parse(text) as { payload: unknown }).payload).toEqual(['second']);
    expect(decodeWebhook(text).payload).toBe('[ "second" ]');
  });

  it('takes the last of other duplicate keys, as JSON.parse does', () => {
    const text = encodeWebhook(base('1')).replace('"attempt":2', '"attempt":2,"attempt":5');
    expect(decodeWebhook(text).attempt).toBe(5);
  });

  it('recognises a payload key spelled with escapes', () => {
    const text = encodeWebhook(base('0')).replace('"payload":0', '"pay\\u006coad": {"k" : 1.0}');
    expect(decodeWebhook(text).payload).toBe('{"k" : 1.0}');
  });

  it.each([
    ['empty text', ''],
    ['not JSON', 'hello'],
    ['an array', '[{"payload":1}]'],
    ['a truncated record', encodeWebhook(base('{"a":1}')).slice(0, -3)],
    ['an unterminated payload string', '{"id":"wh_1","payload":"abc}'],
    ['an unterminated payload object', '{"id":"wh_1","payload":{"a":[1,2]'],
    ['no payload', JSON.stringify({ ...base('1'), payload: undefined })],
    ['trailing garbage', `${encodeWebhook(base('1'))} x`],
    ['a missing colon', '{"id" "wh_1","payload":1}'],
    ['a missing comma', '{"id":"wh_1" "payload":1}'],
    ['a field of the wrong type', encodeWebhook(base('1')).replace('"attempt":2', '"attempt":"2"')],
    ['a negative attempt', encodeWebhook(base('1')).replace('"attempt":2', '"attempt":-1')],
    ['a missing required field', encodeWebhook(base('1')).replace('"config_id":"cfg-1",', '')],
    ['an empty id', encodeWebhook(base('1')).replace('"id":"wh_01JABCDEFGHJKMNPQRSTVWXYZ0"', '"id":""')],
    ['max_attempts 0', encodeWebhook(base('1')).replace('"max_attempts":20', '"max_attempts":0')],
    ['a fractional attempt', encodeWebhook(base('1')).replace('"attempt":2', '"attempt":1.5')],
    ['a header value that is not a string', encodeWebhook(base('1')).replace('"X-Tenant":"acme"', '"X-Tenant":5')],
    ['released_by that is not a list of strings', encodeWebhook(base('1', { released_by: ['d1'] })).replace('["d1"]', '[1]')],
  ])('throws on %s', (_name, text) => {
    expect(() => decodeWebhook(text)).toThrow();
  });

  // Regression: decodeWebhook used to JSON.parse the record with the payload span replaced
  // by `null`, so the payload text itself was never checked and malformed payloads were
  // accepted (then signed and sent as is). Fixed in 0b9bfd6 by parsing the whole record.
  it.each([
    ['a bare word', 'nope'],
    ['an object with an unquoted key', '{abc}'],
    ['mismatched brackets', '[1}'],
    ['a trailing comma', '{"a":1,}'],
    ['a leading zero', '01'],
    ['an invalid escape', '"\\x"'],
  ])('throws on a malformed payload: %s', (_name, payload) => {
    const text = `{"id":"wh_1","config_id":"c","endpoint":"http://x.test","endpoint_hash":"h","attempt":0,"max_attempts":3,"created_at":"a","scheduled_at":"b","payload":${payload}}`;
    expect(() => JSON.parse(text)).toThrow();
    expect(() => decodeWebhook(text)).toThrow();
  });
});

describe('raw-json spans', () => {
  it('finds the span of each member of an object, whitespace excluded', () => {
    const s = ' { "a" : 1.0 , "b":{"c":"}"} ,"d" : [ "]" ] , "e":null}';
    const m = objectMembers(s, 0);
    expect([...m.keys()]).toEqual(['a', 'b', 'd', 'e']);
    expect(slice(s, m.get('a')!)).toBe('1.0');
    expect(slice(s, m.get('b')!)).toBe('{"c":"}"}');
    expect(slice(s, m.get('d')!)).toBe('[ "]" ]');
    expect(slice(s, m.get('e')!)).toBe('null');
  });

  it('keeps the last span of a duplicate key', () => {
    const s = '{"a":1,"a":"two"}';
    expect(slice(s, objectMembers(s, 0).get('a')!)).toBe('"two"');
    expect(JSON.parse(s)).toEqual({ a: 'two' });
  });

  it('returns no members for an empty object and no elements for an empty array', () => {
    expect(objectMembers('{ }', 0).size).toBe(0);
    expect(arrayElements('[\n]', 0)).toEqual([]);
  });

  it('finds the spans of array elements from an offset', () => {
    const s = '{"w": [ {"x":"]"} , 2e5,"s\\"" ,[[]] ]}';
    const start = objectMembers(s, 0).get('w')!.start;
    expect(arrayElements(s, start).map((sp) => slice(s, sp))).toEqual(['{"x":"]"}', '2e5', '"s\\""', '[[]]']);
  });

  it('skips a value and stops at the delimiter after it', () => {
    expect(skipValue('123,4', 0)).toBe(3);
    expect(skipValue('"a\\"b" ', 0)).toBe(6);
    expect(skipValue('[1,[2]]]', 0)).toBe(7);
    expect(skipValue('true}', 0)).toBe(4);
  });

  it.each([
    ['an unterminated string', () => skipValue('"abc', 0)],
    ['an unterminated container', () => skipValue('{"a":[1,2]', 0)],
    ['an empty value', () => skipValue(',', 0)],
    ['an object that is not one', () => objectMembers('[1]', 0)],
    ['an array that is not one', () => arrayElements('{}', 0)],
    ['a member without a colon', () => objectMembers('{"a" 1}', 0)],
    ['members without a comma', () => objectMembers('{"a":1 "b":2}', 0)],
    ['elements without a comma', () => arrayElements('[1 2]', 0)],
    ['a trailing comma in an array', () => arrayElements('[1,]', 0)],
  ])('throws a SyntaxError on %s', (_name, f) => {
    expect(f).toThrow(SyntaxError);
  });
});
