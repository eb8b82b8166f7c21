import { describe, expect, it } from 'vitest';
import { checkBasicAuth, constantTimeEqual, parsePasswd } from '../../core/transformers/registry';

const basic = (s: string) => `Basic ${Buffer.from(s).toString('base64')}`;

describe('transformer Basic auth (core/transformers/registry)', () => {
  it('parses user:password lines, comments and bcrypt entries', () => {
    const users = parsePasswd('# c\n\nalice:pa:ss\r\nbob:$2y$10$abcdefghijklmnopqrstuv\n');
    expect(users.get('alice')).toEqual({ kind: 'plain', secret: 'pa:ss' });
    expect(users.get('bob')).toEqual({ kind: 'bcrypt' });
    expect(() => parsePasswd('no-colon')).toThrow(/line 1/);
  });

  it('compares in constant time and exactly', () => {
    expect(constantTimeEqual('abc', 'abc')).toBe(true);
    expect(constantTimeEqual('abc', 'abd')).toBe(false);
    expect(constantTimeEqual('abc', 'abcd')).toBe(false);
    expect(constantTimeEqual('', '')).toBe(true);
    expect(constantTimeEqual('é', 'e')).toBe(false);
  });

  it('checks credentials; refuses everything when the passwd file was unreadable', () => {
    const auth = { kind: 'passwd' as const, users: parsePasswd('alice:s3cret\nbob:$2b$10$x') };
    expect(checkBasicAuth(auth, basic('alice:s3cret'))).toEqual({ ok: true, user: 'alice' });
    expect(checkBasicAuth(auth, basic('alice:s3cre')).ok).toBe(false);
    expect(checkBasicAuth(auth, basic('carol:s3cret')).ok).toBe(false);
    expect(checkBasicAuth(auth, basic('alice')).ok).toBe(false);
    expect(checkBasicAuth(auth, 'Basic !!!').ok).toBe(false);
    expect(checkBasicAuth(auth, undefined).ok).toBe(false);
    expect(checkBasicAuth(auth, basic('bob:anything'))).toEqual({ ok: false, message: expect.stringMatching(/bcrypt/) });
    expect(checkBasicAuth({ kind: 'refuse', reason: 'EACCES' }, basic('alice:s3cret')).ok).toBe(false);
    expect(checkBasicAuth({ kind: 'none' }, undefined).ok).toBe(true);
  });
});
