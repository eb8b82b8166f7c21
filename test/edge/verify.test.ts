import { sign as githubSign, verify as githubVerify } from '@octokit/webhooks-methods';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { inboundRequest, verifyInbound, type Provider, type VerifyResult } from '../../core/signing/inbound';
import { b64hmac, SIGNERS, standardHeaders, stripe, whsec } from './fixtures/signers';

// Each provider's events signed by the provider's own npm library where one exists (Stripe,
// GitHub, Standard Webhooks — Svix uses the same scheme under svix-* names), otherwise by
// the documented algorithm (Shopify, Hookdeck), checked by core/signing/inbound.

const BODY = '{"id":"evt_1","object":"event","type":"charge.succeeded","data":{"amount":1099,"note":"é ✓"}}';
const NOW = Date.now();

const check = (provider: Provider, secrets: string[], headers: Record<string, string>, body = BODY, now = NOW): Promise<VerifyResult> =>
  verifyInbound({ provider, secrets, toleranceSec: 300 }, inboundRequest(new Headers(headers), new TextEncoder().encode(body), now));

describe.each(SIGNERS)('$provider inbound signatures', (s) => {
  const [oldSecret, newSecret] = s.secrets;
  const nowSec = Math.floor(NOW / 1000);

  it('accepts an event signed by the provider', async () => {
    expect(await check(s.provider, [newSecret], await s.sign(BODY, newSecret, nowSec))).toMatchObject({ ok: true });
  });

  it('accepts events signed with either secret during a rotation', async () => {
    expect(await check(s.provider, [oldSecret, newSecret], await s.sign(BODY, oldSecret, nowSec))).toMatchObject({ ok: true });
    expect(await check(s.provider, [oldSecret, newSecret], await s.sign(BODY, newSecret, nowSec))).toMatchObject({ ok: true });
  });

  it('refuses a changed byte', async () => {
    const headers = await s.sign(BODY, newSecret, nowSec);
    const r = await check(s.provider, [newSecret], headers, BODY.replace('1099', '1098'));
    expect(r).toMatchObject({ ok: false, reason: 'bad_signature' });
  });

  it('refuses a wrong secret', async () => {
    const headers = await s.sign(BODY, oldSecret, nowSec);
    expect(await check(s.provider, [newSecret], headers)).toMatchObject({ ok: false, reason: 'bad_signature' });
  });

  it('refuses a missing signature header, and refuses everything without a secret', async () => {
    const headers = await s.sign(BODY, newSecret, nowSec);
    for (const h of s.signatureHeaders) delete headers[h];
    expect(await check(s.provider, [newSecret], headers)).toMatchObject({ ok: false, reason: 'missing_header' });
    expect(await check(s.provider, [], await s.sign(BODY, newSecret, nowSec))).toMatchObject({ ok: false, reason: 'no_secret' });
  });
});

describe.each(SIGNERS.filter((s) => s.timestamped))('$provider signed timestamps', (s) => {
  it('refuses a stale timestamp (and one from the future)', async () => {
    const [, secret] = s.secrets;
    const nowSec = Math.floor(NOW / 1000);
    expect(await check(s.provider, [secret], await s.sign(BODY, secret, nowSec - 600))).toMatchObject({ ok: false, reason: 'stale_timestamp' });
    expect(await check(s.provider, [secret], await s.sign(BODY, secret, nowSec + 600))).toMatchObject({ ok: false, reason: 'stale_timestamp' });
    expect(await check(s.provider, [secret], await s.sign(BODY, secret, nowSec - 200))).toMatchObject({ ok: true });
  });
});

describe('the provider libraries agree with the signatures used above', () => {
  it('stripe, GitHub and Standard Webhooks verify what they signed', async () => {
    const secret = 'whsec_check';
    const header = stripe.webhooks.generateTestHeaderString({ payload: BODY, secret });
    expect(stripe.webhooks.constructEvent(BODY, header, secret).id).toBe('evt_1');
    expect(await githubVerify('s', BODY, await githubSign('s', BODY))).toBe(true);
    const h = await standardHeaders(BODY, whsec(9), Math.floor(Date.now() / 1000), 'webhook');
    expect(new StandardWebhook(whsec(9)).verify(BODY, h)).toMatchObject({ id: 'evt_1' });
  });

  it('hookdeck: x-hookdeck-signature-2 alone (the rolled secret) passes', async () => {
    expect(await check('hookdeck', ['hd-old', 'hd-new'], { 'x-hookdeck-signature': b64hmac('hd-x', BODY), 'x-hookdeck-signature-2': b64hmac('hd-old', BODY) })).toEqual({
      ok: true,
    });
  });
});
