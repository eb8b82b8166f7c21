import { createHash } from 'node:crypto';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { endpointHash, isWebhookId, ulid, webhookId } from '../../core/domain/ids';
import { hourBucket, iso, nowNs } from '../../core/domain/time';

// Both modules keep per-process state (last millisecond seen), and tests in a file run in
// order: tests that use the real clock come first, tests with explicit (future) times later.

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
const ID_RE = /^wh_[0-9ABCDEFGHJKMNPQRSTVWXYZ]{26}$/;

const decode32 = (s: string): bigint =>
  [...s].reduce((acc, ch) => {
    const v = CROCKFORD.indexOf(ch);
    if (v < 0) throw new Error(`not Crockford base32: ${ch}`);
    return acc * 32n + BigInt(v);
  }, 0n);
const timeOf = (id: string): number => Number(decode32(id.slice(3, 13)));
const randomOf = (id: string): bigint => decode32(id.slice(13));

afterEach(() => {
  vi.restoreAllMocks();
});

describe('webhookId', () => {
  it('is wh_ + 26 Crockford base32 characters, with the current time in the first 10', () => {
    const before = Date.now();
    const id = webhookId();
    const after = Date.now();
    expect(id).toMatch(ID_RE);
    expect(timeOf(id)).toBeGreaterThanOrEqual(before);
    expect(timeOf(id)).toBeLessThanOrEqual(after);
    expect(isWebhookId(id)).toBe(true);
  });

  it('makes 1000 ids in a tight loop that are unique and already sorted', () => {
    const ids = Array.from({ length: 1000 }, () => webhookId());
    expect(new Set(ids).size).toBe(1000);
    expect([...ids].sort()).toEqual(ids);
    // Several ids shared a millisecond, so the monotonic path was taken.
    const ms = new Set(ids.map(timeOf));
    expect(ms.size).toBeLessThan(1000);
  });

  it('increments the random part by exactly one within a millisecond', () => {
    const now = Date.now() + 1000;
    const ids = Array.from({ length: 50 }, () => webhookId(now));
    for (let i = 1; i < ids.length; i++) {
      expect(timeOf(ids[i]!)).toBe(now);
      expect(randomOf(ids[i]!) - randomOf(ids[i - 1]!)).toBe(1n);
    }
  });

  it('carries across bytes when the random part increments', () => {
    // Fresh millisecond → random bytes 00..00 FF; the next id in that ms must be 00..01 00.
    vi.spyOn(globalThis.crypto, 'getRandomValues').mockImplementation(<T extends ArrayBufferView | null>(a: T): T => {
      const b = a as unknown as Uint8Array;
      b.fill(0);
      b[b.length - 1] = 0xff;
      return a;
    });
    const now = Date.now() + 2000;
    const a = webhookId(now);
    const b = webhookId(now);
    expect(a.slice(13)).toBe('000000000000007Z');
    expect(b.slice(13)).toBe('0000000000000080');
    expect(randomOf(b) - randomOf(a)).toBe(1n);
    expect(b > a).toBe(true);
  });

  it('never goes backwards when the clock does', () => {
    const t = Date.now() + 3000;
    const a = webhookId(t);
    const b = webhookId(t - 500);
    expect(b > a).toBe(true);
    expect(timeOf(b)).toBe(t);
  });

  it('sorts ids of later milliseconds after earlier ones', () => {
    const t = Date.now() + 4000;
    const ids = [t, t + 1, t + 31, t + 32, t + 1024, t + 86_400_000].map((x) => webhookId(x));
    expect([...ids].sort()).toEqual(ids);
    expect(ids.map(timeOf)).toEqual([t, t + 1, t + 31, t + 32, t + 1024, t + 86_400_000]);
  });

  it('encodes the 80 random bits drawn for a new millisecond, most significant first', () => {
    const drawn = [
      [0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0xfe, 0xdc],
      [0xff, 0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00, 0x01],
      [0x80, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0xfe],
    ];
    // Past the milliseconds the tests above used (the last one a day ahead).
    const t = Date.now() + 2 * 86_400_000;
    drawn.forEach((bytes, i) => {
      vi.spyOn(globalThis.crypto, 'getRandomValues').mockImplementationOnce(<T extends ArrayBufferView | null>(a: T): T => {
        (a as unknown as Uint8Array).set(bytes);
        return a;
      });
      const id = webhookId(t + i);
      expect(timeOf(id)).toBe(t + i);
      expect(randomOf(id)).toBe(bytes.reduce((acc, b) => acc * 256n + BigInt(b), 0n));
    });
  });

  it('encodes the largest 48-bit time as 7ZZZZZZZZZ', () => {
    expect(ulid(2 ** 48 - 1).slice(0, 10)).toBe('7ZZZZZZZZZ');
  });
});

describe('isWebhookId', () => {
  it.each([
    ['no prefix', '01ARZ3NDEKTSV4RRFFQ69G5FAV'],
    ['lower case', 'wh_01arz3ndektsv4rrffq69g5fav'],
    ['25 characters', 'wh_01ARZ3NDEKTSV4RRFFQ69G5FA'],
    ['27 characters', 'wh_01ARZ3NDEKTSV4RRFFQ69G5FAVX'],
    ['an I', 'wh_01ARZ3NDEKTSV4RRFFQ69G5FAI'],
    ['an L', 'wh_01ARZ3NDEKTSV4RRFFQ69G5FAL'],
    ['an O', 'wh_01ARZ3NDEKTSV4RRFFQ69G5FAO'],
    ['a U', 'wh_01ARZ3NDEKTSV4RRFFQ69G5FAU'],
  ])('rejects %s', (_n, s) => {
    expect(isWebhookId(s)).toBe(false);
  });

  it('accepts a valid id', () => {
    expect(isWebhookId('wh_01ARZ3NDEKTSV4RRFFQ69G5FAV')).toBe(true);
  });
});

describe('endpointHash', () => {
  it.each(['https://example.com/hook', 'http://127.0.0.1:8080/a?b=c&d=e', 'https://bücher.example/ü/🎉', ''])('is the first 16 bytes of sha256(%j) in hex', async (endpoint) => {
    const expected = createHash('sha256').update(endpoint, 'utf8').digest().subarray(0, 16).toString('hex');
    const h = await endpointHash(endpoint);
    expect(h).toBe(expected);
    expect(h).toMatch(/^[0-9a-f]{32}$/);
  });

  it('differs for different endpoints', async () => {
    expect(await endpointHash('https://a.example/x')).not.toBe(await endpointHash('https://a.example/y'));
  });
});

describe('nowNs', () => {
  it('gives 19-digit strings whose ms part is the wall clock', () => {
    const before = Date.now();
    const s = nowNs();
    const after = Date.now();
    expect(s).toMatch(/^\d{19}$/);
    const ms = Number(s.slice(0, 13));
    expect(ms).toBeGreaterThanOrEqual(before);
    expect(ms).toBeLessThanOrEqual(after);
  });

  it('is strictly increasing over 20000 calls, as text and as numbers', () => {
    const xs = Array.from({ length: 20_000 }, () => nowNs());
    for (let i = 1; i < xs.length; i++) {
      expect(xs[i]!.length).toBe(19);
      if (!(xs[i]! > xs[i - 1]!) || !(BigInt(xs[i]!) > BigInt(xs[i - 1]!))) {
        throw new Error(`not increasing at ${i}: ${xs[i - 1]} then ${xs[i]}`);
      }
    }
  });

  it('counts within one millisecond and stays ahead when the clock goes back', () => {
    const t = Date.now() + 10_000;
    expect(nowNs(t)).toBe(`${t}000000`);
    expect(nowNs(t)).toBe(`${t}000001`);
    expect(nowNs(t - 5000)).toBe(`${t}000002`);
    expect(nowNs(t + 1)).toBe(`${t + 1}000000`);
  });

  it('moves to the next millisecond after a million stamps in one', () => {
    const t = Date.now() + 20_000;
    let last = '';
    for (let i = 0; i < 1_000_000; i++) last = nowNs(t);
    expect(last).toBe(`${t}999999`);
    expect(nowNs(t)).toBe(`${t + 1}000000`);
  });
});

describe('hourBucket', () => {
  it.each([
    [Date.UTC(2024, 0, 2, 3, 59, 59, 999), '2024010203'],
    [Date.UTC(2024, 0, 2, 4, 0, 0, 0), '2024010204'],
    [Date.UTC(2023, 11, 31, 23, 30), '2023123123'],
    [Date.UTC(2024, 1, 29, 0, 0), '2024022900'],
    [0, '1970010100'],
  ])('%i → %s', (ms, bucket) => {
    expect(hourBucket(ms)).toBe(bucket);
  });

  it('is UTC whatever the process time zone', () => {
    const prev = process.env.TZ;
    process.env.TZ = 'Asia/Kolkata'; // UTC+05:30
    try {
      const ms = Date.UTC(2024, 5, 30, 20, 45);
      expect(new Date(ms).getHours()).not.toBe(20); // the zone is really in effect
      expect(hourBucket(ms)).toBe('2024063020');
    } finally {
      if (prev === undefined) delete process.env.TZ;
      else process.env.TZ = prev;
    }
  });

  it('agrees with the ISO string over a spread of times', () => {
    for (let ms = Date.UTC(2020, 0, 1); ms < Date.UTC(2030, 0, 1); ms += 7_919_993_117) {
      const s = new Date(ms).toISOString();
      expect(hourBucket(ms)).toBe(s.slice(0, 4) + s.slice(5, 7) + s.slice(8, 10) + s.slice(11, 13));
    }
  });

  it('iso is the ISO-8601 UTC form', () => {
    expect(iso(Date.UTC(2025, 2, 4, 5, 6, 7, 8))).toBe('2025-03-04T05:06:07.008Z');
  });
});
