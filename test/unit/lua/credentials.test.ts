import { describe, expect, it } from 'vitest';
import {
  credentialKeysFromEnv,
  credentialSession,
  decryptCredential,
  encryptCredential,
  importCredentialKey,
  namespaceAllowed,
  redactor,
  runDeliveryScript,
} from '../../../core/lua';

// crypto.decrypt_credential (docs/LUA.md): AES-256-GCM envelopes bound to their name and
// their scope (namespaces, hosts), keys from HOWK_LUA_CRYPTO_<ID>; errors reach Lua as
// (nil, err) and never carry a key.

const K1 = Buffer.alloc(32, 1).toString('base64');
const K2 = Buffer.alloc(32, 2).toString('base64');
const SCOPE = { namespaces: ['wh', 'wh:*'], hosts: ['api.partner.test'] };

describe('Lua credentials (core/lua/credentials)', () => {
  it('round-trips, binds the envelope to its name and scope and refuses a wrong or missing key', async () => {
    const keys = await credentialKeysFromEnv({ HOWK_LUA_CRYPTO_K1: K1, HOWK_LUA_CRYPTO_K2: K2, PATH: '/bin' });
    expect([...keys.keys()].sort()).toEqual(['K1', 'K2']);
    const env = await encryptCredential('K1', keys.get('K1')!, 'partner_token', 'tok-ünï', SCOPE);
    expect(env).toMatch(/^lcred:v2:K1:[A-Za-z0-9_-]+:[A-Za-z0-9+/=]+:[A-Za-z0-9+/=]+$/);
    expect(await decryptCredential(keys, 'partner_token', env)).toBe('tok-ünï');
    await expect(decryptCredential(keys, 'other_name', env)).rejects.toThrow(/failed authentication/);
    await expect(decryptCredential(new Map([['K1', keys.get('K2')!]]), 'partner_token', env)).rejects.toThrow(/failed authentication/);
    await expect(decryptCredential(new Map(), 'partner_token', env)).rejects.toThrow(/needs key K1 \(HOWK_LUA_CRYPTO_K1 is not set\)/);
    await expect(decryptCredential(keys, 'x', 'plaintext')).rejects.toThrow(/not an lcred:v2: envelope/);
    // A flipped ciphertext bit fails authentication.
    const parts = env.split(':');
    const ct = Buffer.from(parts[5]!, 'base64');
    ct[0]! ^= 1;
    parts[5] = ct.toString('base64');
    await expect(decryptCredential(keys, 'partner_token', parts.join(':'))).rejects.toThrow(/failed authentication/);
    // Widening the scope in config (a valid scope of another envelope) fails authentication.
    const wide = await encryptCredential('K1', keys.get('K1')!, 'partner_token', 'other', { namespaces: ['*'], hosts: ['*.test'] });
    const forged = env.split(':');
    forged[3] = wide.split(':')[3]!;
    await expect(decryptCredential(keys, 'partner_token', forged.join(':'))).rejects.toThrow(/failed authentication/);
  });

  it('refuses an unscoped lcred:v1 envelope, saying how to re-encrypt it', async () => {
    const keys = await credentialKeysFromEnv({ HOWK_LUA_CRYPTO_K1: K1 });
    await expect(decryptCredential(keys, 'old', 'lcred:v1:K1:AAAA:BBBB')).rejects.toThrow(/unscoped lcred:v1 envelope: re-encrypt it with `howk credentials encrypt --name old/);
    await expect(encryptCredential('K1', keys.get('K1')!, 'n', 'v', { namespaces: [], hosts: ['h'] })).rejects.toThrow(/at least one namespace/);
    await expect(encryptCredential('K1', keys.get('K1')!, 'n', 'v', { namespaces: ['wh'], hosts: ['https://h/'] })).rejects.toThrow(/invalid host/);
  });

  it('namespace patterns: exact id, <id>:* for descendants, * for all', () => {
    expect(namespaceAllowed('wh', ['wh'])).toBe(true);
    expect(namespaceAllowed('wh:42', ['wh'])).toBe(false);
    expect(namespaceAllowed('wh:42', ['wh:*'])).toBe(true);
    expect(namespaceAllowed('wh:42:6', ['wh:*'])).toBe(true);
    expect(namespaceAllowed('wh', ['wh:*'])).toBe(false);
    expect(namespaceAllowed('whx', ['wh:*'])).toBe(false);
    expect(namespaceAllowed('billing', ['wh', 'wh:*'])).toBe(false);
    expect(namespaceAllowed('anything', ['*'])).toBe(true);
  });

  it('refuses a key that is not 32 bytes, naming the variable and not the value', async () => {
    const short = Buffer.alloc(16, 9).toString('base64');
    const err = await importCredentialKey('BAD', short).catch((e: Error) => e);
    expect((err as Error).message).toBe('HOWK_LUA_CRYPTO_BAD must be a base64-encoded 32-byte key');
    await expect(credentialKeysFromEnv({ 'HOWK_LUA_CRYPTO_a-b': K1 })).rejects.toThrow(/key id/);
  });

  it('reaches Lua as a string or (nil, err); another namespace gets (nil, err); the session records what it handed out', async () => {
    const keys = await credentialKeysFromEnv({ HOWK_LUA_CRYPTO_K1: K1 });
    const good = await encryptCredential('K1', keys.get('K1')!, 'api', 'sekrit', SCOPE);
    const moved = await encryptCredential('K1', keys.get('K1')!, 'elsewhere', 'x', SCOPE);
    const theirs = await encryptCredential('K1', keys.get('K1')!, 'theirs', 'their-secret', { namespaces: ['billing'], hosts: ['billing.test'] });
    const session = credentialSession(keys, { api: good, moved, theirs }, 'wh:7');
    const code = `
      local v, e1 = crypto.decrypt_credential('api')
      local n, e2 = crypto.decrypt_credential('nope')
      local m, e3 = crypto.decrypt_credential('moved')
      local t, e4 = crypto.decrypt_credential('theirs')
      request.headers['authorization'] = 'Bearer ' .. v
      request.headers['x-e2'] = tostring(n) .. ' ' .. e2
      request.headers['x-e3'] = tostring(m) .. ' ' .. e3
      request.headers['x-e4'] = tostring(t) .. ' ' .. e4
    `;
    const r = await runDeliveryScript(code, { payload: '{}', headers: {}, config_id: 'wh:7', attempt: 0 }, { services: { decryptCredential: (n) => session.decrypt(n) } });
    expect(r.headers.authorization).toBe('Bearer sekrit');
    expect(r.headers['x-e2']).toBe('nil unknown credential: nope');
    expect(r.headers['x-e3']).toMatch(/^nil credential moved failed authentication/);
    expect(r.headers['x-e4']).toBe('nil credential theirs is not available to namespace wh:7');
    expect(session.used.map((u) => u.name)).toEqual(['api']);
    expect(session.hostRefusal('api.partner.test')).toBeUndefined();
    expect(session.hostRefusal('evil.test')?.name).toBe('api');
  });

  it('the redactor hides a value as is and in base64, hex and URL encodings', () => {
    const r = redactor(['s3cr3t-token']);
    expect(r('Bearer s3cr3t-token')).toBe('[redacted]');
    expect(r(`Basic ${Buffer.from('user:s3cr3t-token').toString('base64')}`)).toBe('[redacted]');
    expect(r(Buffer.from('s3cr3t-token').toString('hex').toUpperCase())).toBe('[redacted]');
    expect(r('a=s3cr3t%2Dtoken'.replace('%2D', '-'))).toBe('[redacted]');
    expect(r('harmless')).toBe('harmless');
    expect(redactor([])('anything')).toBe('anything');
  });
});
