import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SIGNERS, type Signer } from '../edge/fixtures/signers';
import { startTestFleet, type Mode, type TestFleet } from './fleet';
import { useRedisDb } from './redis-db';

// Replays of signed /incoming requests (Stripe, Standard Webhooks, Svix sign a timestamp):
// within the signature window a copy gets the first run's answer and enqueues nothing.
// The same cases on howk-api (real Kafka + Redis) and on the in-memory adapters.

const FIXTURES = 'test/edge/fixtures/transformers';
const ENV: Record<string, string> = {
  STRIPE_WHSEC: SIGNERS[0]!.secrets[1],
  STANDARD_SECRET: SIGNERS.find((s) => s.provider === 'standard')!.secrets[1],
  SVIX_SECRET: SIGNERS.find((s) => s.provider === 'svix')!.secrets[1],
};
const TIMESTAMPED = SIGNERS.filter((s) => s.timestamped);
type Answer = { count: number; webhooks: { id: string; endpoint: string }[] };

export const incomingReplayCases = (mode: Mode) =>
  describe(`replayed signed /incoming requests (${mode})`, () => {
    const redisDb = mode === 'kafka' ? useRedisDb() : undefined;
    let f: TestFleet;
    beforeAll(async () => {
      Object.assign(process.env, ENV);
      f = await startTestFleet(mode, {
        ...(redisDb ? { redisDb: redisDb() } : {}),
        roles: { worker: false, scheduler: false },
        overrides: { 'transformer.script_dirs': [FIXTURES] },
      });
    });
    afterAll(async () => {
      await f?.stop();
      for (const k of Object.keys(ENV)) delete process.env[k];
    });

    const dest = 'http://127.0.0.1:9/hooks';
    const post = (script: string, body: string, headers: Record<string, string>) =>
      fetch(`${f.baseUrl}/incoming/${script}?dest=${encodeURIComponent(dest)}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
    const scriptOf = (s: Signer) => (s.provider === 'stripe' ? 'stripe-fanout' : `verify-${s.provider}`);
    const event = () => {
      const id = `evt_${Math.random().toString(36).slice(2)}`;
      return { id, body: JSON.stringify({ id, type: 'charge.succeeded', data: { object: { id: 'ch_9', amount: 5, currency: 'usd', customer: 'c' } } }) };
    };
    const now = () => Math.floor(Date.now() / 1000);
    /** Webhooks produced for this event: every record of the pending and slow topics carrying its id. */
    const carrying = (evt: string) => [...f.records('pending'), ...f.records('slow')].filter((r) => r.value?.includes(evt)).length;
    /** The count once `n` records arrived (Kafka is asynchronous), and after a while more, in case more come. */
    const settled = async (evt: string, n: number) => {
      const until = Date.now() + 10_000;
      while (carrying(evt) < n && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
      await new Promise((r) => setTimeout(r, 400));
      return carrying(evt);
    };

    describe.each(TIMESTAMPED)('$provider', (s) => {
      it('answers copies of a signed request with the first answer (Howk-Replay: true) and enqueues once', async () => {
        const { id, body } = event();
        const headers = await s.sign(body, s.secrets[1], now());
        const first = await post(scriptOf(s), body, headers);
        expect(first.status).toBe(200);
        expect(first.headers.get('howk-replay')).toBeNull();
        const answer = (await first.json()) as Answer;
        expect(answer.count).toBeGreaterThan(0);
        for (let i = 0; i < 3; i++) {
          const copy = await post(scriptOf(s), body, headers);
          expect(copy.status).toBe(200);
          expect(copy.headers.get('howk-replay')).toBe('true');
          expect(await copy.json()).toEqual(answer);
        }
        expect(await settled(id, answer.count)).toBe(answer.count);
      });

      it('of identical requests sent at once, one runs; the others get its answer or 409 replay_in_progress', async () => {
        const { id, body } = event();
        const headers = await s.sign(body, s.secrets[1], now());
        const all = await Promise.all(Array.from({ length: 8 }, () => post(scriptOf(s), body, headers)));
        const fresh = all.filter((r) => r.status === 200 && r.headers.get('howk-replay') === null);
        expect(fresh).toHaveLength(1);
        const answer = (await fresh[0]!.json()) as Answer;
        for (const r of all.filter((x) => x !== fresh[0])) {
          if (r.status === 200) expect(await r.json()).toEqual(answer);
          else {
            expect(r.status).toBe(409);
            expect(r.headers.get('retry-after')).toBe('1');
            expect(((await r.json()) as { error: { code: string } }).error.code).toBe('replay_in_progress');
          }
        }
        expect(await settled(id, answer.count)).toBe(answer.count);
      });
    });

    it('stripe: a copy that drops one of its v1 entries is still a copy', async () => {
      const s = SIGNERS[0]!;
      const { id, body } = event();
      const h = (await s.sign(body, s.secrets[1], now()))['stripe-signature']!;
      const first = await post('stripe-fanout', body, { 'stripe-signature': `${h},v1=${'0'.repeat(64)}` });
      expect(first.status).toBe(200);
      const answer = (await first.json()) as Answer;
      const copy = await post('stripe-fanout', body, { 'stripe-signature': h });
      expect([copy.status, copy.headers.get('howk-replay')]).toEqual([200, 'true']);
      expect(await settled(id, answer.count)).toBe(answer.count);
    });

    if (mode === 'kafka')
      it('a copy sent to another api process (the same Redis) is caught too', async () => {
        const other = await startTestFleet('kafka', { config: f.config, redisDb: redisDb!(), roles: { worker: false, scheduler: false } });
        try {
          const s = SIGNERS.find((x) => x.provider === 'svix')!;
          const { id, body } = event();
          const headers = await s.sign(body, s.secrets[1], now());
          const first = await post('verify-svix', body, headers);
          expect(first.status).toBe(200);
          const answer = (await first.json()) as Answer;
          const copy = await fetch(`${other.baseUrl}/incoming/verify-svix?dest=${encodeURIComponent(dest)}`, { method: 'POST', headers, body });
          expect([copy.status, copy.headers.get('howk-replay')]).toEqual([200, 'true']);
          expect(await copy.json()).toEqual(answer);
          expect(await settled(id, answer.count)).toBe(answer.count);
        } finally {
          await other.stop();
        }
      });

    it('a forged request carrying a message id claims nothing: the genuine one still runs', async () => {
      const s = SIGNERS.find((x) => x.provider === 'standard')!;
      const { id, body } = event();
      const genuine = await s.sign(body, s.secrets[1], now());
      const forged = await post('verify-standard', body, { ...genuine, 'webhook-signature': `v1,${Buffer.alloc(32).toString('base64')}` });
      expect(forged.status).toBe(401);
      const res = await post('verify-standard', body, genuine);
      expect([res.status, res.headers.get('howk-replay')]).toEqual([200, null]);
      expect(await settled(id, 1)).toBe(1);
    });
  });
