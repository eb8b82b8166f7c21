import { createHash, createHmac, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { KvStore, LuaLogLevel } from '../../../core/lua/types';
import { deliver, logsOf } from './helpers';

describe('json', () => {
  it('decodes to tables and encodes back (null, arrays, empty containers, nesting)', async () => {
    const lines = await logsOf(`
      local v = json.decode('{"a":1,"b":[1,2,{"c":null}],"d":{},"e":[],"f":"x\\\\u00e9","g":1.5,"h":true}')
      print(v.a, v.b[2], v.b[3].c == json.null, v.f, v.g, v.h, math.type(v.a))
      local back = json.decode(json.encode(v))
      print(json.encode(back.b), json.encode(back.d), json.encode(back.e))
      print(json.encode({1, 2, 3}), json.encode({x = 'y'}), json.encode(json.array({})), json.encode('s"q'), json.encode(nil))
    `);
    expect(lines).toEqual(['1\t2\ttrue\txé\t1.5\ttrue\tinteger', '[1,2,{"c":null}]\t{}\t[]', '[1,2,3]\t{"x":"y"}\t[]\t"s\\"q"\tnull']);
  });

  it('keeps 64-bit integers exact when encoding', async () => {
    expect(await logsOf(`print(json.encode({n = 9007199254740993}))`)).toEqual(['{"n":9007199254740993}']);
  });

  it('errors come back as nil, err', async () => {
    const lines = await logsOf(`
      print(json.decode('{bad'))
      print(json.encode({f = print}))
      print(json.encode({[{}] = 1}))
      local t = {} t.self = t print(json.encode(t))
      print(json.encode(0/0))
      print(json.decode(('['):rep(500) .. (']'):rep(500)))
    `);
    expect(lines[0]).toMatch(/^nil\t.*JSON/);
    expect(lines[1]).toMatch(/^nil\tcannot convert a function value/);
    expect(lines[2]).toMatch(/^nil\tcannot convert a table with table keys/);
    expect(lines[3]).toMatch(/^nil\ttable nested too deeply \(or cyclic\)/);
    expect(lines[4]).toMatch(/^nil\tcannot encode NaN/);
    expect(lines[5]).toMatch(/^nil\tvalue nested too deeply/);
  });
});

describe('base64', () => {
  it('matches Buffer for text and binary, and round-trips bytes exactly', async () => {
    const bin = randomBytes(64);
    const lines = await logsOf(`
      print(base64.encode('hello world'))
      print(base64.decode('aGVsbG8gd29ybGQ='), base64.decode('aGVsbG8gd29ybGQ'))
      local b = base64.decode('${bin.toString('base64')}')
      print(#b, base64.encode(b))
      print(base64.decode('not base64!'))
    `);
    expect(lines[0]).toBe(Buffer.from('hello world').toString('base64'));
    expect(lines[1]).toBe('hello world\thello world');
    expect(lines[2]).toBe(`64\t${bin.toString('base64')}`);
    expect(lines[3]).toMatch(/^nil\tinvalid base64/);
  });
});

describe('crypto', () => {
  const cases = ['', 'abc', 'The quick brown fox jumps over the lazy dog', 'é€𝄞', 'x'.repeat(1000)];
  it.each(cases.map((m) => [m.slice(0, 20), m]))('sha256 and hmac_sha256 match node:crypto (%s)', async (_label, msg) => {
    const [sha, mac, longKey] = await logsOf(
      `print(crypto.sha256(${JSON.stringify(msg)})) print(crypto.hmac_sha256('key', ${JSON.stringify(msg)})) print(crypto.hmac_sha256(('k'):rep(100), ${JSON.stringify(msg)}))`,
    );
    expect(sha).toBe(createHash('sha256').update(msg).digest('hex'));
    expect(mac).toBe(createHmac('sha256', 'key').update(msg).digest('hex'));
    expect(longKey).toBe(createHmac('sha256', 'k'.repeat(100)).update(msg).digest('hex'));
  });

  it('hmac with a binary key (base64-decoded, as whsec_ secrets are)', async () => {
    const key = randomBytes(32);
    const [mac] = await logsOf(`print(crypto.hmac_sha256(base64.decode('${key.toString('base64')}'), 'id.123.{}'))`);
    expect(mac).toBe(createHmac('sha256', key).update('id.123.{}').digest('hex'));
  });

  it('decrypt_credential asks the host, and an unknown name is nil, err', async () => {
    const decryptCredential = async (name: string) => (name === 'stripe' ? 'sk_live_x' : null);
    const lines = await logsOf(`print(crypto.decrypt_credential('stripe')) print(crypto.decrypt_credential('nope'))`, { decryptCredential });
    expect(lines).toEqual(['sk_live_x', 'nil\tunknown credential: nope']);
    expect(await logsOf(`print(crypto.decrypt_credential('stripe'))`)).toEqual(['nil\tcredentials are not configured']);
  });
});

describe('log', () => {
  it('passes level, message and fields to the host callback', async () => {
    const got: [LuaLogLevel, string, unknown][] = [];
    await deliver(`log.info('hello', {n = 1}) log.warn('careful') log.error(42) print('a', nil, true)`, {
      services: { log: (level, message, fields) => got.push([level, message, fields]) },
    });
    expect(got).toEqual([
      ['info', 'hello', { n: 1 }],
      ['warn', 'careful', undefined],
      ['error', '42', undefined],
      ['info', 'a\tnil\ttrue', undefined],
    ]);
  });

  it('stops forwarding after 100 lines', async () => {
    let n = 0;
    await deliver(`for i = 1, 1000 do log.info('x') end`, { services: { log: () => n++ } });
    expect(n).toBe(100);
  });
});

/** An in-memory KvStore that records what it was asked. */
const memoryKv = () => {
  const data = new Map<string, { value: string; ttl?: number }>();
  const store: KvStore = {
    get: async (k) => data.get(k)?.value ?? null,
    set: async (k, value, ttl) => void data.set(k, { value, ttl }),
    del: async (k) => void data.delete(k),
  };
  return { store, data };
};

describe('kv', () => {
  it('get / set with ttl / del, namespaced by config', async () => {
    const { store, data } = memoryKv();
    const lines = await logsOf(`print(kv.get('seen')) print(kv.set('seen', 'yes', 60)) print(kv.get('seen')) print(kv.set('n', 5)) print(kv.del('seen')) print(kv.get('seen'))`, {
      kv: store,
    });
    expect(lines).toEqual(['nil', 'true', 'yes', 'true', 'true', 'nil']);
    expect([...data.entries()]).toEqual([['kv:c:{cfg_a}:n', { value: '5', ttl: undefined }]]);
    await deliver(`kv.set('seen', 'b')`, { input: { config_id: 'cfg_b' }, services: { kv: store } });
    expect(data.get('kv:c:{cfg_b}:seen')?.value).toBe('b');
  });

  it('works from inside pcall and user coroutines (the yield is forwarded)', async () => {
    const { store } = memoryKv();
    await store.set('kv:c:{cfg_a}:k', 'v');
    const lines = await logsOf(
      `print(pcall(kv.get, 'k'))
       local co = coroutine.wrap(function() local v = kv.get('k') coroutine.yield(v .. '1') return v .. '2' end)
       print(co(), co())`,
      { kv: store },
    );
    expect(lines).toEqual(['true\tv', 'v1\tv2']);
  });

  it('misuse and store failures are nil, err', async () => {
    const failing: KvStore = { get: async () => Promise.reject(new Error('redis down')), set: async () => {}, del: async () => {} };
    const lines = await logsOf(`print(kv.get('k')) print(kv.set('k', 'v', -1)) print(kv.get(''))`, { kv: failing });
    expect(lines).toEqual(['nil\tredis down', 'nil\tttl_seconds must be an integer between 1 and 31622400', 'nil\tkv key must be 1-512 characters']);
    expect(await logsOf(`print(kv.get('k'))`)).toEqual(['nil\tkv is not configured']);
  });

  it('a host call that never answers is cut by the wall-clock limit', async () => {
    const hanging: KvStore = { get: () => new Promise(() => {}), set: async () => {}, del: async () => {} };
    await expect(deliver(`kv.get('k')`, { services: { kv: hanging }, limits: { wallTimeoutMs: 100 } })).rejects.toMatchObject({ code: 'script_timeout' });
  });
});
