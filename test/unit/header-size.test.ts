import type { Context } from 'hono';
import { describe, expect, it } from 'vitest';
import { headerSize } from '../../core/http/middleware/limits';
import { nodeHeaderSize } from '../../workers/node/header-size';

// howk-api counts request headers from Node's raw list instead of building a Headers object
// per request: the counts must be those of the Headers object, whatever the repeats and case.

const viaHeaders = (raw: string[]) => {
  const h = new Headers();
  for (let i = 0; i < raw.length; i += 2) h.append(raw[i]!, raw[i + 1]!);
  return headerSize(h);
};
const viaRaw = (raw: string[]) => nodeHeaderSize({ env: { incoming: { rawHeaders: raw } } } as unknown as Context);

const rng = (seed: number) => () => {
  seed = (seed * 1_103_515_245 + 12_345) & 0x7fffffff;
  return seed / 0x7fffffff;
};

describe('request header size from the raw list', () => {
  it('matches the Headers object on repeated names, any case, cookies, Set-Cookie and padded or empty values', () => {
    const names = ['Host', 'host', 'X-A', 'x-a', 'Cookie', 'cookie', 'Set-Cookie', 'set-cookie', 'Accept', 'X-Long-Header-Name'];
    const values = ['', 'v', ' padded ', '\tt\t', 'a, b', 'é', 'x'.repeat(300), '  '];
    const r = rng(11);
    for (let n = 0; n < 2000; n++) {
      const raw: string[] = [];
      for (let k = Math.floor(r() * 12); k > 0; k--) raw.push(names[Math.floor(r() * names.length)]!, values[Math.floor(r() * values.length)]!);
      expect(viaRaw(raw), JSON.stringify(raw)).toEqual(viaHeaders(raw));
    }
  });

  it('leaves pseudo-headers out and answers nothing outside Node', () => {
    expect(viaRaw([':path', '/x', 'a', 'b'])).toEqual({ count: 1, bytes: 2 });
    expect(nodeHeaderSize({ env: undefined } as unknown as Context)).toBeUndefined();
  });
});
