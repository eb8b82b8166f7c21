import { describe, expect, it } from 'vitest';
import { jsonText } from '../../console/json-text';

// The console's payload text (console/json-text.ts): JSON.stringify's text where it can, without
// recursion, so a payload deeper than any call stack is still shown.

const ALL = { indent: 0, maxDepth: Infinity, maxChars: Infinity };

describe('jsonText', () => {
  it("writes JSON.stringify's text, compact and indented", () => {
    const values: unknown[] = [null, 0, -1.5, 'a"\\\n\u2028', true, [], {}, [1, [2, {}], { a: [] }], { a: { b: { c: 1 } }, 'k"': [true, null, 'x'], n: 1e21 }];
    for (const v of values) for (const indent of [0, 2]) expect(jsonText(v, { ...ALL, indent }).text, JSON.stringify(v)).toBe(JSON.stringify(v, null, indent));
  });

  it('writes a payload nested 200,000 deep whole (JSON.stringify overflows the stack on it)', () => {
    const text = '['.repeat(200_000) + ']'.repeat(200_000);
    const deep = JSON.parse(text) as unknown;
    expect(() => JSON.stringify(deep)).toThrow(RangeError);
    expect(jsonText(deep, ALL)).toEqual({ text, deeper: false, cut: false });
  });

  it('stops at maxDepth with […] / {…}, and at maxChars', () => {
    expect(jsonText({ a: [[1]], b: {} }, { indent: 0, maxDepth: 2, maxChars: 100 })).toEqual({ text: '{"a":[[…]],"b":{}}', deeper: true, cut: false });
    expect(jsonText({ a: { b: { c: 1 } } }, { indent: 0, maxDepth: 1, maxChars: 100 })).toEqual({ text: '{"a":{…}}', deeper: true, cut: false });
    const long = jsonText(
      Array.from({ length: 1000 }, (_, i) => i),
      { indent: 0, maxDepth: 5, maxChars: 50 },
    );
    expect([long.text.length, long.cut, long.text]).toEqual([50, true, JSON.stringify(Array.from({ length: 1000 }, (_, i) => i)).slice(0, 50)]);
  });
});
