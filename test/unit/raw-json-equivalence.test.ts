import { describe, expect, it } from 'vitest';
import { arrayElements, elementMembers, memberSpan, objectMembers, skipValue, slice } from '../../core/domain/raw-json';
import { parseBatchBody, parseEnqueueBody, type EnqueueLimits } from '../../core/domain/enqueue';
import { ValidationError } from '../../core/errors/errors';

// The enqueue path cuts payloads out of the request text with the one-pass readers
// (memberSpan, elementMembers) and a string skip that jumps from quote to quote. They must
// find exactly the spans the character-by-character readers find, on any JSON.

/** The character-by-character string skip the quote-to-quote one replaced. */
const skipStringSlow = (s: string, i: number): number => {
  i++;
  while (i < s.length) {
    const c = s.charCodeAt(i);
    if (c === 0x5c) i += 2;
    else if (c === 0x22) return i + 1;
    else i++;
  }
  throw new SyntaxError('unterminated string');
};

const rng = (seed: number) => () => {
  seed = (seed * 1_103_515_245 + 12_345) & 0x7fffffff;
  return seed / 0x7fffffff;
};

const ws = (r: () => number) => [' ', '', '\n', '\t', '\r\n  '][Math.floor(r() * 5)]!;
const STRINGS = ['', 'a', '\\"', '\\\\', '\\\\\\"', 'x\\\\\\"', '}', ']', '{\\"a\\":1}', '\\u0022', 'é€😀', 'payload', 'p\\u0061yload', ',:', '\\n\\t'];
const str = (r: () => number): string => `"${STRINGS[Math.floor(r() * STRINGS.length)]!}"`;
const value = (r: () => number, depth: number): string => {
  const k = Math.floor(r() * (depth > 2 ? 4 : 7));
  if (k === 0) return str(r);
  if (k === 1) return ['0', '-1.5e3', '12345678901234567890', '1E-7'][Math.floor(r() * 4)]!;
  if (k === 2) return ['true', 'false', 'null'][Math.floor(r() * 3)]!;
  if (k === 3) return str(r);
  if (k === 4 || k === 5) return object(r, depth + 1);
  return `[${ws(r)}${Array.from({ length: Math.floor(r() * 4) }, () => value(r, depth + 1)).join(`${ws(r)},${ws(r)}`)}${ws(r)}]`;
};
const KEYS = ['"payload"', '"endpoint"', '"p\\u0061yload"', '"a"', '"\\"payload\\""', '"pay\\\\load"', '"headers"'];
const object = (r: () => number, depth: number): string => {
  const n = Math.floor(r() * 5);
  const members = Array.from({ length: n }, () => `${ws(r)}${KEYS[Math.floor(r() * KEYS.length)]}${ws(r)}:${ws(r)}${value(r, depth)}${ws(r)}`);
  return `{${members.join(',')}${n ? '' : ws(r)}}`;
};

describe('raw-json one-pass readers match the character-by-character ones', () => {
  it('skipValue ends every string where a character-by-character skip ends it', () => {
    const r = rng(7);
    for (let n = 0; n < 2000; n++) {
      const s = str(r) + value(r, 0);
      expect(skipValue(s, 0)).toBe(skipStringSlow(s, 0));
    }
    for (const s of ['"abc', '"a\\"', '"\\\\\\"', '"']) {
      expect(() => skipValue(s, 0)).toThrow(SyntaxError);
      expect(() => skipStringSlow(s, 0)).toThrow(SyntaxError);
    }
  });

  it('memberSpan and elementMembers find the spans objectMembers and arrayElements find', () => {
    const r = rng(42);
    for (let n = 0; n < 1500; n++) {
      const items = Array.from({ length: Math.floor(r() * 6) }, () => (r() < 0.8 ? object(r, 0) : value(r, 0)));
      const text = `${ws(r)}{${ws(r)}"webhooks"${ws(r)}:${ws(r)}[${ws(r)}${items.join(`${ws(r)},${ws(r)}`)}${ws(r)}]${ws(r)}}`;
      expect(() => JSON.parse(text), text).not.toThrow();
      const at = objectMembers(text, 0).get('webhooks')!.start;
      expect(memberSpan(text, 0, 'webhooks')).toEqual(objectMembers(text, 0).get('webhooks'));
      const expected = arrayElements(text, at).map((el) => (text[el.start] === '{' ? objectMembers(text, el.start).get('payload') : undefined));
      expect(elementMembers(text, at, 'payload'), text).toEqual(expected);
      // The span holds the value JSON.parse gives the member (the last duplicate, escaped keys unescaped).
      const parsed = JSON.parse(text) as { webhooks: unknown[] };
      elementMembers(text, at, 'payload').forEach((span, i) => {
        const item = parsed.webhooks[i] as Record<string, unknown> | null;
        const has = typeof item === 'object' && item !== null && !Array.isArray(item) && Object.hasOwn(item, 'payload');
        expect(span !== undefined, text).toBe(has);
        if (span) expect(JSON.parse(slice(text, span))).toEqual(item!.payload);
      });
    }
  });

  it('throws a SyntaxError on malformed arrays and objects as arrayElements does', () => {
    for (const s of ['[1 2]', '[1,]', '{}', '[{"a" 1}]', '[{"a":1 "b":2}]', '[{"a":1}x]']) {
      expect(() => elementMembers(s, 0, 'a'), s).toThrow(SyntaxError);
    }
    expect(() => memberSpan('[1]', 0, 'a')).toThrow(SyntaxError);
    expect(memberSpan('{ }', 0, 'a')).toBeUndefined();
    expect(elementMembers('[ ]', 0, 'a')).toEqual([]);
  });
});

describe('enqueue bodies: payload bytes as sent, errors as before', () => {
  const L: EnqueueLimits = { max_batch_size: 100, max_endpoint_length: 2048, max_headers: 10, max_header_value_length: 100, max_idempotency_key_length: 64 };

  it('cuts each payload byte for byte, whatever the whitespace, escapes and duplicate keys', () => {
    const r = rng(3);
    for (let n = 0; n < 300; n++) {
      const payloads = Array.from({ length: 1 + Math.floor(r() * 5) }, () => value(r, 0));
      const items = payloads.map((p) => `{${ws(r)}"payload":${ws(r)}"dup",${ws(r)}"endpoint":"http://x.test/a\\"b","p\\u0061yload"${ws(r)}:${ws(r)}${p}${ws(r)}}`);
      const text = `{"webhooks":[${items.join(`${ws(r)},`)}]}`;
      expect(parseBatchBody(text, L).map((i) => i.payload)).toEqual(payloads);
      expect(parseEnqueueBody(items[0]!, L).payload).toBe(payloads[0]);
    }
  });

  it('reports invalid items with the same fields as before', () => {
    const bad = '{"webhooks":[{"endpoint":"http://x.test","payload":1},{"endpoint":"ftp://x","payload":{"a":"}"}},3,{"endpoint":"http://x.test"}]}';
    const e = (() => {
      try {
        parseBatchBody(bad, L);
      } catch (err) {
        return err as ValidationError;
      }
    })();
    expect(e).toBeInstanceOf(ValidationError);
    expect(e!.issues.map((i) => i.path)).toEqual(['webhooks.1.endpoint', 'webhooks.2', 'webhooks.3.payload']);
  });
});
