import { describe, expect, it } from 'vitest';
import { generateKey, KeyTable } from '../../core/security/api-keys';

// KeyTable.verify remembers tokens that matched, so a producer's repeated requests do not
// hash the same token each time; what the table says about the key must still win.
describe('API key verification with remembered tokens', () => {
  const now = new Date('2026-12-01T00:00:00Z');

  it('a token verified before is refused once its key is revoked', async () => {
    const t = new KeyTable();
    const { token, record } = await generateKey({ scopes: ['enqueue'] }, now);
    t.apply(record.id, JSON.stringify(record));
    expect((await t.verify(token))?.id).toBe(record.id);
    expect((await t.verify(token))?.id).toBe(record.id);
    t.apply(record.id, JSON.stringify({ ...record, revoked_at: now.toISOString() }));
    expect(await t.verify(token)).toBeNull();
  });

  it('a token verified before is refused once its id holds another secret, and after a tombstone', async () => {
    const t = new KeyTable();
    const a = await generateKey({ scopes: ['read'] }, now);
    const b = await generateKey({ scopes: ['read'] }, now);
    t.apply(a.record.id, JSON.stringify(a.record));
    expect(await t.verify(a.token)).not.toBeNull();
    t.apply(a.record.id, JSON.stringify({ ...a.record, hash: b.record.hash }));
    expect(await t.verify(a.token)).toBeNull();
    t.apply(a.record.id, JSON.stringify(a.record));
    expect(await t.verify(a.token)).not.toBeNull();
    t.apply(a.record.id, null);
    expect(await t.verify(a.token)).toBeNull();
  });

  it('a wrong secret for a known id is refused, before and after the right one was verified', async () => {
    const t = new KeyTable();
    const { token, record } = await generateKey({ scopes: ['admin'] }, now);
    t.apply(record.id, JSON.stringify(record));
    const wrong = token.slice(0, -2) + (token.endsWith('AA') ? 'BB' : 'AA');
    expect(await t.verify(wrong)).toBeNull();
    expect(await t.verify(token)).not.toBeNull();
    expect(await t.verify(wrong)).toBeNull();
  });
});
