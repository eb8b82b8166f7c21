import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { howkSignature, signatureHeaders, standardSignature, type SigningScheme } from '../../core/signing/outbound';
import { nodeHmacSha256 } from '../../workers/node/hmac';
import { createSecretBox, isSealed, randomSecretsKey, SecretBoxError, secretBoxFromConfig } from '../../core/signing/secret-box';

// A receiver written from the Standard Webhooks specification, with node:crypto only:
// signed content = "<webhook-id>.<webhook-timestamp>.<body>", HMAC-SHA256 keyed with the
// base64-decoded part of the secret after "whsec_", header = space-separated "v1,<base64>".
const verifyStandard = (secret: string, headers: Record<string, string>, body: string): boolean => {
  const key = Buffer.from(secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret, 'base64');
  const id = headers['webhook-id'];
  const ts = headers['webhook-timestamp'];
  const header = headers['webhook-signature'];
  if (!id || !ts || !header) return false;
  const expected = createHmac('sha256', key).update(`${id}.${ts}.${body}`, 'utf8').digest();
  return header.split(' ').some((part) => {
    const [version, sig] = part.split(',');
    if (version !== 'v1' || !sig) return false;
    const got = Buffer.from(sig, 'base64');
    return got.length === expected.length && timingSafeEqual(got, expected);
  });
};

// HOWK's X-Webhook-Signature: "t=<unix>,v1=<hex HMAC-SHA256(secret, '<unix>.<body>')>".
const verifyHowk = (secretBytes: Buffer, header: string | undefined, body: string): boolean => {
  const m = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(header ?? '');
  if (!m) return false;
  const expected = createHmac('sha256', secretBytes).update(`${m[1]}.${body}`, 'utf8').digest('hex');
  return timingSafeEqual(Buffer.from(m[2]!, 'hex'), Buffer.from(expected, 'hex'));
};

const newSecret = () => `whsec_${randomBytes(24).toString('base64')}`;
const BODY = '{"amount": 10.50, "name": "café 🎉", "big": 12345678901234567890123}';

describe('Standard Webhooks signature', () => {
  it('reproduces the specification test vector', async () => {
    const sig = await standardSignature(['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'], 'msg_p5jXN8AQM9LWM0D4loKWxJek', 1614265330, '{"test": 2432232314}');
    expect(sig).toBe('v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=');
  });

  it('matches a vector computed with node:crypto over UTF-8 bytes', async () => {
    const secret = 'whsec_' + Buffer.from('0123456789abcdef0123456789abcdef').toString('base64');
    const expected = createHmac('sha256', Buffer.from('0123456789abcdef0123456789abcdef'))
      .update(Buffer.from(`wh_01J000000000000000000000.1700000000.${BODY}`, 'utf8'))
      .digest('base64');
    expect(await standardSignature([secret], 'wh_01J000000000000000000000', 1700000000, BODY)).toBe(`v1,${expected}`);
  });

  it("the worker's Node HMAC gives the same headers as WebCrypto, for both schemes and a rotation", async () => {
    const secrets = [newSecret(), 'plain-sëcret'];
    const input = { id: 'wh_01JTEST0000000000000000000', attempt: 2, timestamp: 1_750_000_000, body: BODY, secrets, scheme: 'both' as const };
    const viaNode = await signatureHeaders({ ...input, hmac: nodeHmacSha256 });
    expect(viaNode).toEqual(await signatureHeaders(input));
    expect(verifyStandard(secrets[0]!, viaNode, BODY)).toBe(true);
  });

  it('signatureHeaders output verifies with a spec receiver, and not after tampering', async () => {
    const secret = newSecret();
    const h = await signatureHeaders({ id: 'wh_01JTEST0000000000000000000', attempt: 0, timestamp: 1_750_000_000, body: BODY, secrets: [secret], scheme: 'standard' });
    expect(h['webhook-id']).toBe('wh_01JTEST0000000000000000000');
    expect(h['webhook-timestamp']).toBe('1750000000');
    expect(h['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
    expect(verifyStandard(secret, h, BODY)).toBe(true);
    expect(verifyStandard(secret, h, BODY.replace('10.50', '10.5'))).toBe(false);
    expect(verifyStandard(secret, { ...h, 'webhook-timestamp': '1750000001' }, BODY)).toBe(false);
    expect(verifyStandard(secret, { ...h, 'webhook-id': 'wh_other' }, BODY)).toBe(false);
    expect(verifyStandard(newSecret(), h, BODY)).toBe(false);
  });

  it('during a rotation sends one v1 signature per secret, each verifying with its own secret', async () => {
    const [oldS, newS, stranger] = [newSecret(), newSecret(), newSecret()];
    const h = await signatureHeaders({ id: 'wh_rot', attempt: 3, timestamp: 1_750_000_123, body: BODY, secrets: [newS, oldS], scheme: 'standard' });
    const parts = h['webhook-signature']!.split(' ');
    expect(parts).toHaveLength(2);
    const only = (part: string) => ({ ...h, 'webhook-signature': part });
    expect(verifyStandard(newS, only(parts[0]!), BODY)).toBe(true);
    expect(verifyStandard(oldS, only(parts[0]!), BODY)).toBe(false);
    expect(verifyStandard(oldS, only(parts[1]!), BODY)).toBe(true);
    expect(verifyStandard(newS, only(parts[1]!), BODY)).toBe(false);
    // A receiver that still has either secret accepts the whole header.
    expect(verifyStandard(oldS, h, BODY)).toBe(true);
    expect(verifyStandard(newS, h, BODY)).toBe(true);
    expect(verifyStandard(stranger, h, BODY)).toBe(false);
  });

  it('signs a raw (non-whsec) secret with its UTF-8 bytes', async () => {
    const expected = createHmac('sha256', Buffer.from('plain-sëcret', 'utf8')).update(`wh_1.5.${BODY}`).digest('base64');
    expect(await standardSignature(['plain-sëcret'], 'wh_1', 5, BODY)).toBe(`v1,${expected}`);
  });
});

describe('howk signature and schemes', () => {
  const input = (scheme: SigningScheme, secrets: string[] = ['howk-secret-1']) => ({ id: 'wh_X', attempt: 0, timestamp: 1_700_000_000, body: BODY, secrets, scheme });

  it('is t=<unix>,v1=<hex HMAC of "<unix>.<body>">', async () => {
    const expected = createHmac('sha256', 'howk-secret-1').update(`1700000000.${BODY}`, 'utf8').digest('hex');
    expect(await howkSignature('howk-secret-1', 1_700_000_000, BODY)).toBe(`t=1700000000,v1=${expected}`);
  });

  it("scheme 'howk' sets only X-Webhook-Signature, and it verifies", async () => {
    const h = await signatureHeaders(input('howk'));
    expect(h['webhook-signature']).toBeUndefined();
    expect(verifyHowk(Buffer.from('howk-secret-1'), h['x-webhook-signature'], BODY)).toBe(true);
    expect(verifyHowk(Buffer.from('howk-secret-1'), h['x-webhook-signature'], `${BODY} `)).toBe(false);
  });

  it("scheme 'standard' sets only webhook-signature", async () => {
    const h = await signatureHeaders(input('standard', [newSecret()]));
    expect(h['webhook-signature']).toBeDefined();
    expect(h['x-webhook-signature']).toBeUndefined();
  });

  it("scheme 'both' sets both headers, each verifying", async () => {
    const secret = newSecret();
    const h = await signatureHeaders(input('both', [secret]));
    expect(verifyStandard(secret, h, BODY)).toBe(true);
    expect(verifyHowk(Buffer.from(secret.slice(6), 'base64'), h['x-webhook-signature'], BODY)).toBe(true);
    expect(h['x-webhook-signature']).toMatch(/^t=1700000000,v1=[0-9a-f]{64}$/);
  });

  it('sends no signature at all without a secret, but still the id, attempt and timestamp headers', async () => {
    const h = await signatureHeaders(input('both', []));
    expect(h).toEqual({ 'webhook-id': 'wh_X', 'webhook-timestamp': '1700000000', 'x-webhook-id': 'wh_X', 'x-webhook-attempt': '1', 'x-webhook-timestamp': '1700000000' });
  });

  it.each([
    [0, '1'],
    [1, '2'],
    [19, '20'],
  ])('X-Webhook-Attempt is attempt + 1 (attempt %i → %s), the ids stay the same', async (attempt, header) => {
    const h = await signatureHeaders({ ...input('standard'), attempt });
    expect(h['x-webhook-attempt']).toBe(header);
    expect(h['x-webhook-id']).toBe('wh_X');
    expect(h['webhook-id']).toBe('wh_X');
    expect(h['x-webhook-timestamp']).toBe('1700000000');
  });
});

describe('secret box (AES-256-GCM envelopes)', () => {
  const key1 = randomBytes(32).toString('base64');
  const key2 = randomBytes(32).toString('base64');
  const SECRET = 'whsec_c2VjcmV0LXNpZ25pbmcta2V5LWZvci10ZXN0cw==';

  it('seals and opens back the same text', async () => {
    const box = await createSecretBox('k1', { k1: key1 });
    for (const s of [SECRET, 'plain text sëcret 🎉', 'x']) {
      const env = await box.seal(s);
      expect(isSealed(env)).toBe(true);
      expect(env).toMatch(/^enc:v1:k1:[A-Za-z0-9+/=]+:[A-Za-z0-9+/=]+$/);
      expect(await box.open(env)).toBe(s);
    }
  });

  it('leaks no plaintext: neither the text nor its base64, and two seals differ', async () => {
    const box = await createSecretBox('k1', { k1: key1 });
    const a = await box.seal(SECRET);
    const b = await box.seal(SECRET);
    expect(a).not.toBe(b);
    for (const leak of [SECRET, SECRET.slice(6), Buffer.from(SECRET).toString('base64').slice(0, 16), 'c2VjcmV0']) expect(a).not.toContain(leak);
  });

  it('rejects a tampered ciphertext, iv or key id', async () => {
    const box = await createSecretBox('k1', { k1: key1 });
    const env = await box.seal(SECRET);
    const [, , id, iv, ct] = env.split(':') as [string, string, string, string, string];
    const ctBytes = Buffer.from(ct, 'base64');
    ctBytes[0] = ctBytes[0]! ^ 1;
    const ivBytes = Buffer.from(iv, 'base64');
    ivBytes[0] = ivBytes[0]! ^ 1;
    await expect(box.open(`enc:v1:${id}:${iv}:${ctBytes.toString('base64')}`)).rejects.toThrow(SecretBoxError);
    await expect(box.open(`enc:v1:${id}:${ivBytes.toString('base64')}:${ct}`)).rejects.toThrow(SecretBoxError);
    await expect(box.open(`enc:v1:k9:${iv}:${ct}`)).rejects.toThrow(SecretBoxError);
    await expect(box.open(`enc:v1:${id}:${iv}`)).rejects.toThrow(SecretBoxError);
    await expect(box.open(SECRET)).rejects.toThrow(SecretBoxError);
  });

  it('a different key under the same id cannot open it', async () => {
    const env = await (await createSecretBox('k1', { k1: key1 })).seal(SECRET);
    await expect((await createSecretBox('k1', { k1: key2 })).open(env)).rejects.toThrow(SecretBoxError);
  });

  it('after a key rotation, envelopes sealed with the old key id still open', async () => {
    const before = await createSecretBox('k1', { k1: key1 });
    const oldEnv = await before.seal(SECRET);
    const after = await secretBoxFromConfig({ secrets_key: key2, secrets_key_id: 'k2', old_secrets_keys: `k1:${key1}` });
    expect(after).toBeDefined();
    expect(await after!.open(oldEnv)).toBe(SECRET);
    const newEnv = await after!.seal(SECRET);
    expect(newEnv.startsWith('enc:v1:k2:')).toBe(true);
    // A box that only knows k2 cannot read the old envelope; one that only knows k1 cannot read the new one.
    await expect((await createSecretBox('k2', { k2: key2 })).open(oldEnv)).rejects.toThrow(SecretBoxError);
    await expect(before.open(newEnv)).rejects.toThrow(SecretBoxError);
  });

  it('rejects keys that are not 32 bytes', async () => {
    await expect(createSecretBox('k1', { k1: randomBytes(16).toString('base64') })).rejects.toThrow(SecretBoxError);
    await expect(createSecretBox('k1', { k1: randomBytes(33).toString('base64') })).rejects.toThrow(SecretBoxError);
    await expect(secretBoxFromConfig({ secrets_key: randomBytes(31).toString('base64'), secrets_key_id: 'k1' })).rejects.toThrow(SecretBoxError);
    await expect(createSecretBox('k1', { k1: key1, k0: randomBytes(8).toString('base64') })).rejects.toThrow(SecretBoxError);
  });

  it('rejects a current key id it does not have', async () => {
    await expect(createSecretBox('k2', { k1: key1 })).rejects.toThrow(SecretBoxError);
  });

  it('has no box without a key, and makes random 32-byte keys', async () => {
    expect(await secretBoxFromConfig({ secrets_key_id: 'k1' })).toBeUndefined();
    const k = randomSecretsKey();
    expect(Buffer.from(k, 'base64')).toHaveLength(32);
    expect(randomSecretsKey()).not.toBe(k);
    const box = await createSecretBox('k', { k });
    expect(await box.open(await box.seal('s'))).toBe('s');
  });
});
