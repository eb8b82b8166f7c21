import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { findHeaderIssue, headerProblem } from '../../core/domain/headers';
import { decodeWhsec, signingSecretProblem } from '../../core/domain/secret-format';
import { signatureHeaders } from '../../core/signing/outbound';
import { InvalidSecretError } from '../../core/errors/errors';

// undici's own request builder, to show that whatever the validator lets through, undici
// builds (it refuses inside its connection pool otherwise, see workers/node/sender.ts).
const UndiciRequest = createRequire(import.meta.url)('undici/lib/core/request.js') as new (origin: string, opts: object, handler: object) => unknown;
const handler = { onConnect() {}, onHeaders() {}, onData() {}, onComplete() {}, onError() {} };
const undiciBuilds = (name: string, value: string): boolean => {
  try {
    new UndiciRequest('http://127.0.0.1', { path: '/', method: 'POST', headers: { [name]: value }, body: 'x' }, handler);
    return true;
  } catch {
    return false;
  }
};

const REFUSED: [string, string, string][] = [
  ['Expect', '100-continue', 'client'],
  ['expect', '', 'client'],
  ['Keep-Alive', 'timeout=5', 'client'],
  ['Upgrade', 'websocket', 'client'],
  ['Connection', 'close', 'client'],
  ['Transfer-Encoding', 'chunked', 'client'],
  ['TE', 'trailers', 'client'],
  ['Trailer', 'X-A', 'client'],
  ['Proxy-Connection', 'keep-alive', 'client'],
  ['Host', 'evil.example', 'client'],
  ['content-length', '5', 'client'],
  ['X-A', '€', 'not one byte'],
  ['X-A', 'price 5 €', 'not one byte'],
  ['X-A', '日本', 'not one byte'],
  ['X-A', '😀', 'not one byte'],
  ['X-A', 'a\u0001b', 'control character U+0001'],
  ['X-A', '\u007f', 'control character U+007F'],
  ['X-A', 'a\r\nInjected: yes', 'control character U+000D'],
  ['X-A', 'a\nb', 'control character U+000A'],
  ['X-A', 'a\u0000b', 'control character U+0000'],
  ['X-A', '\u000b', 'control character U+000B'],
  ['Bad Name', 'v', 'not a valid header name'],
  ['x:a', 'v', 'not a valid header name'],
  ['', 'v', 'not a valid header name'],
  ['X-É', 'v', 'not a valid header name'],
  ['(x)', 'v', 'not a valid header name'],
];

const ACCEPTED: [string, string][] = [
  ['X-Tenant', 'acme'],
  ['Authorization', 'Bearer abc.def'],
  ['X-Empty', ''],
  ['X-Tab', 'a\tb'],
  ['X-Latin1', 'café ÿ \u0080'],
  ['X-Printable', ' !"#$%&\'()*+,-./0-9:;<=>?@[\\]^_`{|}~'],
  ["!#$%&'*+.^_`|~", 'token chars'],
  ['content-type', 'application/json'],
  ['User-Agent', 'x/1'],
];

describe('outbound header rules', () => {
  it.each(REFUSED)('refuses %j: %j (%s)', (name, value, why) => {
    expect(headerProblem(name, value)).toContain(why === 'client' ? 'managed by the HTTP client' : why);
    expect(findHeaderIssue({ 'X-Fine': 'ok', [name]: value })).toEqual({ name, message: headerProblem(name, value) });
  });

  it.each(ACCEPTED)('accepts %j: %j, and undici builds the request', (name, value) => {
    expect(headerProblem(name, value)).toBeUndefined();
    expect(undiciBuilds(name, value)).toBe(true);
  });

  it('refuses a superset of what undici refuses (every header undici will not build is refused)', () => {
    const undiciRefused = REFUSED.filter(([n, v]) => !undiciBuilds(n, v));
    // The cases that undici itself refuses are all in the table; the rest are hop-by-hop names it would forward.
    expect(undiciRefused.map(([n]) => n.toLowerCase())).toEqual(expect.arrayContaining(['expect', 'keep-alive', 'upgrade', 'transfer-encoding', 'x-a', 'bad name']));
    for (let c = 0; c <= 0x2ff; c++) {
      const v = `a${String.fromCharCode(c)}b`;
      if (!undiciBuilds('x-a', v)) expect(headerProblem('x-a', v), `U+${c.toString(16)}`).toBeDefined();
      else expect(headerProblem('x-a', v), `U+${c.toString(16)}`).toBeUndefined();
    }
  });

  it('finds a bad value under a name that passed before, exactly as headerProblem does, for every character', () => {
    expect(findHeaderIssue({ 'x-a': 'fine', 'x-b': 'fine' })).toBeUndefined();
    for (let c = 0; c <= 0x2ff; c++) {
      const v = `a${String.fromCharCode(c)}b`;
      const problem = headerProblem('x-a', v);
      expect(findHeaderIssue({ 'x-b': 'fine', 'x-a': v }), `U+${c.toString(16)}`).toEqual(problem ? { name: 'x-a', message: problem } : undefined);
    }
    expect(findHeaderIssue({ 'x-a': 5 as unknown as string })?.message).toContain('must be a string');
  });

  it('says which header, and no more of the value than the offending character', () => {
    const issue = findHeaderIssue({ Authorization: 'Bearer s3cret€' });
    expect(issue?.name).toBe('Authorization');
    expect(issue?.message).not.toContain('s3cret');
  });
});

describe('signing secret format', () => {
  const b64 = (n: number) => Buffer.alloc(n, 7).toString('base64');

  it.each([
    ['whsec_AA', 'at least 16 bytes (this one has 1)'],
    ['whsec_', 'standard base64'],
    ['whsec_!!!!', 'standard base64'],
    [`whsec_${b64(15)}`, 'at least 16 bytes (this one has 15)'],
    [`whsec_${b64(32).replace(/\+/g, '-')}x-_`, 'standard base64'],
    [`whsec_${b64(24)} `, 'standard base64'],
    [`whsec_${b64(24).slice(0, 5)} ${b64(24).slice(5)}`, 'standard base64'],
    ['whsec_A', 'standard base64'],
    [`whsec_${b64(24)}===`, 'standard base64'],
  ])('refuses %j', (secret, why) => {
    expect(signingSecretProblem(secret)).toContain(why);
  });

  it.each([
    [`whsec_${b64(16)}`],
    [`whsec_${b64(24)}`],
    [`whsec_${b64(64)}`],
    [`whsec_${b64(17).replace(/=+$/, '')}`],
    ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'],
    ['a raw secret of any shape'],
  ])('accepts %j', (secret) => {
    expect(signingSecretProblem(secret)).toBeUndefined();
  });

  it('decodes to the bytes the base64 holds', () => {
    const d = decodeWhsec(`whsec_${Buffer.from('0123456789abcdef!').toString('base64')}`);
    expect(d.ok && Buffer.from(d.key).toString()).toBe('0123456789abcdef!');
  });

  it('signing with a malformed stored whsec_ secret fails with a typed error, not a network-looking one', async () => {
    for (const secret of ['whsec_!!!!', 'whsec_AA']) {
      await expect(signatureHeaders({ id: 'msg_1', attempt: 0, timestamp: 1, body: '{}', secrets: [secret], scheme: 'both' })).rejects.toBeInstanceOf(InvalidSecretError);
    }
  });
});
