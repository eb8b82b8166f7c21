import { describe, expect, it, vi } from 'vitest';
import bcrypt from 'bcryptjs';
import { checkBasicAuth, constantTimeEqual, parsePasswd } from '../../core/transformers/registry';
import { bcryptVerifier } from '../../workers/node/passwords';

// bcrypt of 'hunter2' at cost 4 (the lowest): the check is real, only cheaper.
const HASH = bcrypt.hashSync('hunter2', 4);

const basic = (s: string) => `Basic ${Buffer.from(s).toString('base64')}`;

describe('transformer Basic auth (core/transformers/registry)', () => {
  it('parses user:password lines, comments and bcrypt entries', () => {
    const users = parsePasswd(`# c\n\nalice:pa:ss\r\nbob:${HASH.replace('$2b$', '$2y$')}\n`);
    expect(users.get('alice')).toEqual({ kind: 'plain', secret: 'pa:ss' });
    expect(users.get('bob')).toEqual({ kind: 'bcrypt', hash: HASH.replace('$2b$', '$2y$') });
    expect(() => parsePasswd('no-colon')).toThrow(/line 1/);
    // A truncated hash is an error (the file then refuses everything), never a plaintext password.
    expect(() => parsePasswd('ok:x\nbob:$2b$10$abcdefghijklmnopqrstuv')).toThrow(/line 2: malformed bcrypt hash for bob/);
  });

  it('compares in constant time and exactly', () => {
    expect(constantTimeEqual('abc', 'abc')).toBe(true);
    expect(constantTimeEqual('abc', 'abd')).toBe(false);
    expect(constantTimeEqual('abc', 'abcd')).toBe(false);
    expect(constantTimeEqual('', '')).toBe(true);
    expect(constantTimeEqual('é', 'e')).toBe(false);
  });

  it('checks credentials; refuses everything when the passwd file was unreadable', async () => {
    const auth = { kind: 'passwd' as const, users: parsePasswd(`alice:s3cret\nbob:${HASH}`) };
    const verify = bcryptVerifier();
    expect(await checkBasicAuth(auth, basic('alice:s3cret'), verify)).toEqual({ ok: true, user: 'alice' });
    expect((await checkBasicAuth(auth, basic('alice:s3cre'), verify)).ok).toBe(false);
    expect((await checkBasicAuth(auth, basic('carol:s3cret'), verify)).ok).toBe(false);
    expect((await checkBasicAuth(auth, basic('alice'), verify)).ok).toBe(false);
    expect((await checkBasicAuth(auth, 'Basic !!!', verify)).ok).toBe(false);
    expect((await checkBasicAuth(auth, undefined, verify)).ok).toBe(false);
    expect(await checkBasicAuth(auth, basic('bob:hunter2'), verify)).toEqual({ ok: true, user: 'bob' });
    expect(await checkBasicAuth(auth, basic('bob:hunter3'), verify)).toEqual({ ok: false, message: 'invalid credentials' });
    expect((await checkBasicAuth({ kind: 'refuse', reason: 'EACCES' }, basic('alice:s3cret'), verify)).ok).toBe(false);
    expect((await checkBasicAuth({ kind: 'none' }, undefined)).ok).toBe(true);
  });

  it('refuses a bcrypt entry where no verifier is supplied (never accepts it)', async () => {
    const auth = { kind: 'passwd' as const, users: parsePasswd(`bob:${HASH}`) };
    expect(await checkBasicAuth(auth, basic('bob:hunter2'))).toEqual({ ok: false, message: expect.stringMatching(/bcrypt/) });
  });

  it('remembers a good password for a while, never a wrong one', async () => {
    let t = 0;
    const spy = vi.spyOn(bcrypt, 'compare');
    const verify = bcryptVerifier({ ttlMs: 1000, now: () => t });
    expect(await verify('hunter2', HASH)).toBe(true);
    expect(await verify('hunter2', HASH)).toBe(true);
    expect(spy).toHaveBeenCalledTimes(1);
    expect(await verify('hunter3', HASH)).toBe(false);
    expect(await verify('hunter3', HASH)).toBe(false);
    expect(spy).toHaveBeenCalledTimes(3);
    t = 2000;
    expect(await verify('hunter2', HASH)).toBe(true);
    expect(spy).toHaveBeenCalledTimes(4);
    spy.mockRestore();
  });
});
