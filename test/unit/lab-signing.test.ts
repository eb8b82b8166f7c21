import { describe, expect, it } from 'vitest';
import { changeOneCharacter, DEMO_PAYLOAD, DEMO_SECRET, DEMO_TIMESTAMP, signDemo, verifyDemo } from '../../core/lab';
import { hmacSha256Sync } from '../../core/lua/sha256';
import { toBase64, toHex, utf8 } from '../../core/signing/encoding';

// The Lab's signed-payload demo: Howk's outbound signing (both schemes), checked as a
// receiver checks it; one changed character and verification fails.

describe('Lab signing demo', () => {
  it('signs with the outbound scheme: HMAC-SHA256 over "id.timestamp.body" and "timestamp.body"', async () => {
    const signed = await signDemo();
    // Computed independently with the synchronous SHA-256 (core/lua/sha256.ts).
    const key = utf8(DEMO_SECRET);
    const standard = toBase64(hmacSha256Sync(key, utf8(`wh-0001.${DEMO_TIMESTAMP}.${DEMO_PAYLOAD}`)));
    const howk = toHex(hmacSha256Sync(key, utf8(`${DEMO_TIMESTAMP}.${DEMO_PAYLOAD}`)));
    expect(signed.headers).toMatchObject({
      'webhook-id': 'wh-0001',
      'webhook-timestamp': String(DEMO_TIMESTAMP),
      'webhook-signature': `v1,${standard}`,
      'x-webhook-signature': `t=${DEMO_TIMESTAMP},v1=${howk}`,
    });
    // Deterministic: the same headers every time.
    expect((await signDemo()).headers).toEqual(signed.headers);
    expect(await verifyDemo(signed, DEMO_PAYLOAD)).toMatchObject({ ok: true, standard: { ok: true }, howk: { ok: true } });
  });

  it('changing any one character of the body makes both signatures fail', async () => {
    const signed = await signDemo();
    for (let i = 0; i < DEMO_PAYLOAD.length; i++) {
      const tampered = changeOneCharacter(DEMO_PAYLOAD, i);
      expect([...tampered].filter((c, j) => c !== DEMO_PAYLOAD[j])).toHaveLength(1);
      const v = await verifyDemo(signed, tampered);
      expect(v).toMatchObject({ ok: false, standard: { ok: false, reason: 'bad_signature' }, howk: { ok: false, reason: 'bad_signature' } });
    }
  });

  it('a stale timestamp is refused even with the right body (tolerance 5 minutes)', async () => {
    const signed = await signDemo();
    expect((await verifyDemo(signed, DEMO_PAYLOAD, (DEMO_TIMESTAMP + 300) * 1000)).ok).toBe(true);
    const v = await verifyDemo(signed, DEMO_PAYLOAD, (DEMO_TIMESTAMP + 301) * 1000);
    expect(v).toMatchObject({ ok: false, standard: { reason: 'stale_timestamp' }, howk: { reason: 'stale_timestamp' } });
  });
});
