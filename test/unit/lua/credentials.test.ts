import { describe, expect, it } from 'vitest';
import { credentialKeysFromEnv, credentialStore, decryptCredential, encryptCredential, importCredentialKey, runDeliveryScript } from '../../../core/lua';

// crypto.decrypt_credential (docs/LUA.md): AES-256-GCM envelopes bound to their name, keys
// from HOWK_LUA_CRYPTO_<ID>; errors reach Lua as (nil, err) and never carry a key.

const K1 = Buffer.alloc(32, 1).toString('base64');
const K2 = Buffer.alloc(32, 2).toString('base64');

describe('Lua credentials (core/lua/credentials)', () => {
  it('round-trips, binds the envelope to its name and refuses a wrong or missing key', async () => {
    const keys = await credentialKeysFromEnv({ HOWK_LUA_CRYPTO_K1: K1, HOWK_LUA_CRYPTO_K2: K2, PATH: '/bin' });
    expect([...keys.keys()].sort()).toEqual(['K1', 'K2']);
    const env = await encryptCredential('K1', keys.get('K1')!, 'partner_token', 'tok-ünï');
    expect(env).toMatch(/^lcred:v1:K1:[A-Za-z0-9+/=]+:[A-Za-z0-9+/=]+$/);
    expect(await decryptCredential(keys, 'partner_token', env)).toBe('tok-ünï');
    await expect(decryptCredential(keys, 'other_name', env)).rejects.toThrow(/failed authentication/);
    await expect(decryptCredential(new Map([['K1', keys.get('K2')!]]), 'partner_token', env)).rejects.toThrow(/failed authentication/);
    await expect(decryptCredential(new Map(), 'partner_token', env)).rejects.toThrow(/needs key K1 \(HOWK_LUA_CRYPTO_K1 is not set\)/);
    await expect(decryptCredential(keys, 'x', 'plaintext')).rejects.toThrow(/not an lcred:v1: envelope/);
    // A flipped ciphertext bit fails authentication.
    const parts = env.split(':');
    const ct = Buffer.from(parts[4]!, 'base64');
    ct[0]! ^= 1;
    parts[4] = ct.toString('base64');
    await expect(decryptCredential(keys, 'partner_token', parts.join(':'))).rejects.toThrow(/failed authentication/);
  });

  it('refuses a key that is not 32 bytes, naming the variable and not the value', async () => {
    const short = Buffer.alloc(16, 9).toString('base64');
    const err = await importCredentialKey('BAD', short).catch((e: Error) => e);
    expect((err as Error).message).toBe('HOWK_LUA_CRYPTO_BAD must be a base64-encoded 32-byte key');
    await expect(credentialKeysFromEnv({ 'HOWK_LUA_CRYPTO_a-b': K1 })).rejects.toThrow(/key id/);
  });

  it('reaches Lua as a string or (nil, err)', async () => {
    const keys = await credentialKeysFromEnv({ HOWK_LUA_CRYPTO_K1: K1 });
    const good = await encryptCredential('K1', keys.get('K1')!, 'api', 'sekrit');
    const moved = await encryptCredential('K1', keys.get('K1')!, 'elsewhere', 'x');
    const decrypt = credentialStore(keys, { api: good, moved });
    const code = `
      local v, e1 = crypto.decrypt_credential('api')
      local n, e2 = crypto.decrypt_credential('nope')
      local m, e3 = crypto.decrypt_credential('moved')
      request.headers['authorization'] = 'Bearer ' .. v
      request.headers['x-e2'] = tostring(n) .. ' ' .. e2
      request.headers['x-e3'] = tostring(m) .. ' ' .. e3
    `;
    const r = await runDeliveryScript(code, { payload: '{}', headers: {}, config_id: 'wh', attempt: 0 }, { services: { decryptCredential: decrypt } });
    expect(r.headers.authorization).toBe('Bearer sekrit');
    expect(r.headers['x-e2']).toBe('nil unknown credential: nope');
    expect(r.headers['x-e3']).toMatch(/^nil credential moved failed authentication/);
  });
});
