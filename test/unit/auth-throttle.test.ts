import { describe, expect, it } from 'vitest';
import { clientAddress, createAuthThrottle, type AuthThrottleSettings } from '../../core/security/auth-throttle';

// The throttle in front of /incoming password checks, on a fake clock.

const S: AuthThrottleSettings = { clientRate: 0.5, clientBurst: 3, transformerRate: 2, transformerBurst: 5, maxConcurrent: 2 };
const T0 = 1_000_000;

describe('auth throttle', () => {
  it('lets a client fail `burst` times, then refuses with Retry-After until a token refills', () => {
    const t = createAuthThrottle(S);
    for (let i = 0; i < 3; i++) {
      const a = t.admit('10.0.0.1', 'vault', T0);
      if (!a.ok) throw new Error(`refused at ${i}`);
      a.ticket.done(false);
    }
    expect(t.admit('10.0.0.1', 'vault', T0)).toEqual({ ok: false, reason: 'client', retryAfterSec: 2 });
    expect(t.admit('10.0.0.1', 'other', T0 + 1999)).toMatchObject({ ok: false, reason: 'client' });
    // Another client is not affected; the first gets one try per 2 s.
    expect(t.admit('10.0.0.2', 'vault', T0)).toMatchObject({ ok: true });
    expect(t.admit('10.0.0.1', 'vault', T0 + 2000)).toMatchObject({ ok: true });
  });

  it('gives the tokens of a success back: a legitimate sender is never limited', () => {
    const t = createAuthThrottle({ ...S, maxConcurrent: 0 });
    for (let i = 0; i < 100; i++) {
      const a = t.admit('10.0.0.1', 'vault', T0);
      if (!a.ok) throw new Error(`refused at ${i}`);
      a.ticket.done(true);
    }
  });

  it('limits failures on one transformer across clients', () => {
    const t = createAuthThrottle({ ...S, maxConcurrent: 0 });
    for (let i = 0; i < 5; i++) {
      const a = t.admit(`10.0.1.${i}`, 'vault', T0);
      if (!a.ok) throw new Error(`refused at ${i}`);
      a.ticket.done(false);
    }
    expect(t.admit('10.0.2.1', 'vault', T0)).toEqual({ ok: false, reason: 'transformer', retryAfterSec: 1 });
    expect(t.admit('10.0.2.1', 'other', T0)).toMatchObject({ ok: true });
    // The client's token taken for the transformer refusal was given back.
    const c = createAuthThrottle({ ...S, transformerBurst: 1, maxConcurrent: 0 });
    const first = c.admit('a', 'x', T0);
    if (first.ok) first.ticket.done(false);
    for (let i = 0; i < 5; i++) expect(c.admit('a', 'x', T0)).toMatchObject({ reason: 'transformer' });
    expect(c.admit('a', 'y', T0)).toMatchObject({ ok: true });
  });

  it('runs at most maxConcurrent checks at once; a refusal for want of a slot spends its token', () => {
    const t = createAuthThrottle(S);
    const a = t.admit('c', 'v', T0);
    const b = t.admit('c', 'v', T0);
    expect(t.running()).toBe(2);
    expect(t.admit('c', 'v', T0)).toEqual({ ok: false, reason: 'busy', retryAfterSec: 1 });
    expect(t.admit('c', 'v', T0)).toMatchObject({ ok: false, reason: 'client' });
    if (!a.ok || !b.ok) throw new Error('refused');
    a.ticket.done(true);
    a.ticket.done(true); // a second done changes nothing
    expect(t.running()).toBe(1);
    b.ticket.done(false);
    expect(t.running()).toBe(0);
  });

  it('keys by the socket address; X-Forwarded-For only when trusted, and then its last entry', () => {
    expect(clientAddress('127.0.0.1', '203.0.113.9', false)).toBe('127.0.0.1');
    expect(clientAddress('127.0.0.1', '203.0.113.9, 198.51.100.7', true)).toBe('198.51.100.7');
    expect(clientAddress('127.0.0.1', ' , ', true)).toBe('127.0.0.1');
    expect(clientAddress(undefined, undefined, false)).toBe('unknown');
  });
});
