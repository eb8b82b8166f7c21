import { describe, expect, it } from 'vitest';
import { memoize, urlParts } from '../../core/domain/memo';

describe('memoize', () => {
  it('computes a key once, keeps at most max results and drops the oldest first', () => {
    const calls: string[] = [];
    const f = memoize(2, (k: string) => {
      calls.push(k);
      return k.length;
    });
    expect([f('a'), f('bb'), f('a')]).toEqual([1, 2, 1]);
    expect(calls).toEqual(['a', 'bb']);
    f('ccc'); // evicts 'a'
    f('bb');
    f('a');
    expect(calls).toEqual(['a', 'bb', 'ccc', 'a']);
  });

  it('remembers false, and nothing for a key whose function threw', () => {
    let n = 0;
    const f = memoize(10, (k: string) => {
      n++;
      if (k === 'bad') throw new Error('bad');
      return false;
    });
    expect(f('x')).toBe(false);
    expect(f('x')).toBe(false);
    expect(() => f('bad')).toThrow('bad');
    expect(() => f('bad')).toThrow('bad');
    expect(n).toBe(3);
  });

  it('urlParts gives origin, host name and path with query', () => {
    expect(urlParts('https://Api.Example.com:8443/hooks/in?x=1')).toEqual({ origin: 'https://api.example.com:8443', host: 'api.example.com', path: '/hooks/in?x=1' });
  });
});
