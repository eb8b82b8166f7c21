import { sign as octokitSign } from '@octokit/webhooks-methods';
import { createHash, createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { inboundRequest, verifyInbound, type Provider } from '../../core/signing/inbound';

// Each verifier against vectors computed here from the provider's documented algorithm with
// node:crypto (the verifiers use Web Crypto only), GitHub's also cross-checked with
// @octokit/webhooks-methods.

const BODY = '{"id":"evt_1","amount":1099,"note":"é ✓"}';
const NOW_SEC = 1_760_000_000;
const hmac = (key: string | Buffer, data: string) => createHmac('sha256', key).update(data);

/** What a timestamped scheme's success carries: the request's replay mark, valid as long as a copy verifies. */
const marked = (id: string, t = NOW_SEC) => ({ ok: true, replay: { id, validUntil: (t + 300) * 1000 } });
/** Stripe's mark: the signed content (timestamp and body), whichever v1 entries the header carries. */
const stripeMark = (t = NOW_SEC) => marked(`stripe:${createHash('sha256').update(`${t}.${BODY}`).digest('hex')}`, t);

const check = (provider: Provider, secrets: string[], headers: Record<string, string>, body = BODY, nowSec = NOW_SEC) =>
  verifyInbound({ provider, secrets, toleranceSec: 300 }, inboundRequest(new Headers(headers), new TextEncoder().encode(body), nowSec * 1000));

describe('stripe (Stripe-Signature: t=, v1= hex HMAC of "t.body")', () => {
  const sign = (secret: string, t = NOW_SEC, body = BODY) => `t=${t},v1=${hmac(secret, `${t}.${body}`).digest('hex')}`;
  const [old, cur] = ['whsec_old_vector', 'whsec_cur_vector'];

  it('accepts the current and the rotated secret, and a header with one v1 per secret', async () => {
    expect(await check('stripe', [cur, old], { 'stripe-signature': sign(cur) })).toEqual(stripeMark());
    expect(await check('stripe', [cur, old], { 'stripe-signature': sign(old) })).toEqual(stripeMark());
    const both = `t=${NOW_SEC},v1=${hmac('whsec_other', `${NOW_SEC}.${BODY}`).digest('hex')},v1=${hmac(cur, `${NOW_SEC}.${BODY}`).digest('hex')},v0=abc`;
    expect(await check('stripe', [cur], { 'stripe-signature': both })).toEqual(stripeMark());
  });

  it('refuses a tampered body, a timestamp outside the tolerance (past or future), a malformed header', async () => {
    expect(await check('stripe', [cur], { 'stripe-signature': sign(cur) }, BODY.replace('1099', '1098'))).toMatchObject({ ok: false, reason: 'bad_signature' });
    expect(await check('stripe', [cur], { 'stripe-signature': sign(cur, NOW_SEC - 301) })).toMatchObject({ ok: false, reason: 'stale_timestamp' });
    expect(await check('stripe', [cur], { 'stripe-signature': sign(cur, NOW_SEC + 301) })).toMatchObject({ ok: false, reason: 'stale_timestamp' });
    expect(await check('stripe', [cur], { 'stripe-signature': sign(cur, NOW_SEC - 299) })).toEqual(stripeMark(NOW_SEC - 299));
    expect(await check('stripe', [cur], { 'stripe-signature': `t=${NOW_SEC}` })).toMatchObject({ ok: false, reason: 'malformed_header' });
    expect(await check('stripe', [cur], { 'stripe-signature': `t=${NOW_SEC},v1=zz` })).toMatchObject({ ok: false, reason: 'bad_signature' });
  });
});

describe('github (X-Hub-Signature-256: sha256= hex HMAC of the body)', () => {
  it('accepts the documented signature, the same as @octokit/webhooks-methods makes, with either secret', async () => {
    const mine = `sha256=${hmac('gh-secret', BODY).digest('hex')}`;
    expect(await octokitSign('gh-secret', BODY)).toBe(mine);
    expect(await check('github', ['gh-secret'], { 'x-hub-signature-256': mine })).toEqual({ ok: true });
    expect(await check('github', ['gh-new', 'gh-secret'], { 'x-hub-signature-256': mine })).toEqual({ ok: true });
  });

  it('refuses a tampered body, the sha1 header alone, a missing prefix', async () => {
    const mine = `sha256=${hmac('gh-secret', BODY).digest('hex')}`;
    expect(await check('github', ['gh-secret'], { 'x-hub-signature-256': mine }, `${BODY} `)).toMatchObject({ ok: false, reason: 'bad_signature' });
    expect(await check('github', ['gh-secret'], { 'x-hub-signature': `sha1=${createHmac('sha1', 'gh-secret').update(BODY).digest('hex')}` })).toMatchObject({
      ok: false,
      reason: 'missing_header',
    });
    expect(await check('github', ['gh-secret'], { 'x-hub-signature-256': mine.slice(7) })).toMatchObject({ ok: false, reason: 'malformed_header' });
  });
});

describe('shopify (X-Shopify-Hmac-Sha256: base64 HMAC of the body)', () => {
  it('accepts either secret, refuses a tampered body and hex instead of base64', async () => {
    const sig = hmac('shpss_a', BODY).digest('base64');
    expect(await check('shopify', ['shpss_b', 'shpss_a'], { 'x-shopify-hmac-sha256': sig })).toEqual({ ok: true });
    expect(await check('shopify', ['shpss_a'], { 'x-shopify-hmac-sha256': sig }, BODY.slice(1))).toMatchObject({ ok: false, reason: 'bad_signature' });
    expect(await check('shopify', ['shpss_a'], { 'x-shopify-hmac-sha256': hmac('shpss_a', BODY).digest('hex') })).toMatchObject({ ok: false, reason: 'bad_signature' });
  });
});

describe.each(['webhook', 'svix'] as const)('%s-* (Standard Webhooks: v1,base64 HMAC of "id.ts.body", key = base64 of whsec_)', (prefix) => {
  const provider: Provider = prefix === 'webhook' ? 'standard' : 'svix';
  const key = (n: number) => Buffer.alloc(32, n);
  const secret = (n: number) => `whsec_${key(n).toString('base64')}`;
  const headers = (signWith: number[], ts = NOW_SEC, id = 'msg_1') => ({
    [`${prefix}-id`]: id,
    [`${prefix}-timestamp`]: String(ts),
    [`${prefix}-signature`]: signWith.map((n) => `v1,${hmac(key(n), `${id}.${ts}.${BODY}`).digest('base64')}`).join(' '),
  });

  it('accepts a signature by either configured secret, and a sender signing with two', async () => {
    expect(await check(provider, [secret(1), secret(2)], headers([2]))).toEqual(marked(`${prefix}:msg_1`));
    expect(await check(provider, [secret(1), secret(2)], headers([1]))).toEqual(marked(`${prefix}:msg_1`));
    expect(await check(provider, [secret(2)], headers([9, 2]))).toEqual(marked(`${prefix}:msg_1`));
  });

  it('refuses a tampered body or id, a stale timestamp, a header without v1', async () => {
    expect(await check(provider, [secret(1)], headers([1]), BODY.replace('evt_1', 'evt_2'))).toMatchObject({ ok: false, reason: 'bad_signature' });
    expect(await check(provider, [secret(1)], { ...headers([1]), [`${prefix}-id`]: 'msg_2' })).toMatchObject({ ok: false, reason: 'bad_signature' });
    expect(await check(provider, [secret(1)], headers([1], NOW_SEC - 3600))).toMatchObject({ ok: false, reason: 'stale_timestamp' });
    expect(await check(provider, [secret(1)], { ...headers([1]), [`${prefix}-signature`]: 'v2,abc' })).toMatchObject({ ok: false, reason: 'malformed_header' });
  });
});

describe('hookdeck (x-hookdeck-signature, -2 while a secret is rolled: base64 HMAC of the body)', () => {
  it('accepts the signature of either secret in either header; refuses a tampered body', async () => {
    const a = hmac('hd-a', BODY).digest('base64');
    const b = hmac('hd-b', BODY).digest('base64');
    expect(await check('hookdeck', ['hd-a'], { 'x-hookdeck-signature': a })).toEqual({ ok: true });
    expect(await check('hookdeck', ['hd-b'], { 'x-hookdeck-signature': a, 'x-hookdeck-signature-2': b })).toEqual({ ok: true });
    expect(await check('hookdeck', ['hd-c', 'hd-a'], { 'x-hookdeck-signature': a })).toEqual({ ok: true });
    expect(await check('hookdeck', ['hd-a'], { 'x-hookdeck-signature': a }, `${BODY}\n`)).toMatchObject({ ok: false, reason: 'bad_signature' });
  });
});

it('refuses everything when no secret is set: an unconfigured secret never means "unchecked"', async () => {
  expect(await check('github', ['', ''], { 'x-hub-signature-256': `sha256=${hmac('', BODY).digest('hex')}` })).toMatchObject({ ok: false, reason: 'no_secret' });
});
