import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uniq, waitFor } from '../helpers/env';
import { startReceiver, type Receiver } from '../helpers/receiver';

// Enqueue ?wait= (and Prefer: wait=): the answer holds until the first attempt of each webhook,
// bounded by api.sync_max_wait and api.sync_max_waiting. Run on real Kafka + Redis with the
// worker in another fleet than the two api instances (sync-wait.kafka.test.ts), and on
// howk-dev's in-process adapters (sync-wait.embedded.test.ts).

export const SYNC_OVERRIDES = { 'api.sync_max_wait': '4s', 'api.sync_max_waiting': 3, 'api.auth.enabled': true };

export type SyncHarness = {
  /** Base URLs of the api instances (the first is used unless a test says). */
  apis: string[];
  /** An admin key, and a key with the enqueue and read scopes bound to `config`. */
  adminKey: string;
  boundKey(config: string): Promise<string>;
  /** Records produced to the pending topic so far. */
  pending(): { key: string | null; value: string | null }[];
  stop(): Promise<void>;
};

type Answer = { status: number; body: any; headers: Headers };

export const syncWaitSuite = (name: string, start: () => Promise<SyncHarness>) =>
  describe(`enqueue ?wait= (${name})`, () => {
    let h: SyncHarness;
    let rx: Receiver;
    beforeAll(async () => {
      rx = await startReceiver((r) => {
        if (r.path === '/unavailable') return { status: 503 };
        if (r.path === '/bad') return { status: 400, body: 'no such order' };
        if (r.path.startsWith('/sleep')) return { status: 200, delayMs: Number(r.path.split('/')[2]) };
        return { status: 200 };
      });
      h = await start();
      // The worker's consumers are assigned their partitions: the first delivery is not a test's.
      const first = await fetch(`${h.apis[0]}/webhooks/${uniq('warm')}/enqueue`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${h.adminKey}` },
        body: JSON.stringify({ endpoint: rx.url('/ok'), payload: {} }),
      });
      const { webhook_id } = (await first.json()) as { webhook_id: string };
      await waitFor(() => rx.byWebhook().get(webhook_id), { what: 'the first delivery', timeoutMs: 60_000 });
    }, 120_000);
    afterAll(async () => {
      await h?.stop();
      await rx?.close();
    });

    const enqueue = async (config: string, path: string, o: { wait?: string; prefer?: string; key?: string; api?: number; batch?: number } = {}): Promise<Answer> => {
      const q = o.wait !== undefined ? `?wait=${encodeURIComponent(o.wait)}` : '';
      const item = { endpoint: rx.url(path), payload: { n: 1 }, max_attempts: 2 };
      const url = `${h.apis[o.api ?? 0]}/webhooks/${config}/enqueue${o.batch ? '/batch' : ''}${q}`;
      const res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${o.key ?? h.adminKey}`, ...(o.prefer ? { prefer: o.prefer } : {}) },
        body: JSON.stringify(o.batch ? { webhooks: Array.from({ length: o.batch }, () => item) } : item),
      });
      return { status: res.status, body: await res.json(), headers: res.headers };
    };

    it('a 200 receiver: 200 delivered, on either api instance', async () => {
      for (const api of h.apis.keys()) {
        const a = await enqueue(uniq('cfg'), '/ok', { wait: '4s', api });
        expect(a.status).toBe(200);
        expect(a.body).toMatchObject({ status: 'delivered', outcome: { attempts: 1, status_code: 200, error: null, next_retry_at: null } });
        expect(a.headers.get('howk-wait')).toBe('done');
        expect(a.headers.get('preference-applied')).toBe('wait=4');
        expect(rx.byWebhook().get(a.body.webhook_id)).toHaveLength(1);
      }
    });

    it('a 503 receiver: retrying with next_retry_at (Prefer: wait=4)', async () => {
      const a = await enqueue(uniq('cfg'), '/unavailable', { prefer: 'respond-async, wait=4' });
      expect(a.status).toBe(200);
      expect(a.body).toMatchObject({ status: 'retrying', outcome: { attempts: 1, status_code: 503 } });
      expect(Date.parse(a.body.outcome.next_retry_at)).toBeGreaterThan(0);
    });

    it('a 400 receiver: dead_lettered, as classify has it (a 4xx cannot succeed by repetition)', async () => {
      const a = await enqueue(uniq('cfg'), '/bad', { wait: '4s' });
      expect(a.status).toBe(200);
      expect(a.body).toMatchObject({ status: 'dead_lettered', outcome: { status_code: 400, dead_reason: 'unrecoverable' } });
    });

    it('a receiver slower than the wait: 202 pending when it expires, delivered later all the same', async () => {
      const a = await enqueue(uniq('cfg'), '/sleep/2500', { wait: '500ms' });
      expect(a.status).toBe(202);
      expect(a.body).toEqual({ webhook_id: expect.any(String), status: 'pending' });
      expect(a.headers.get('howk-wait')).toBe('expired');
      await waitFor(() => rx.byWebhook().get(a.body.webhook_id), { what: 'the late delivery' });
    });

    it('a batch waits for every webhook; each result says its own outcome', async () => {
      const a = await enqueue(uniq('cfg'), '/ok', { wait: '4s', batch: 3 });
      expect(a.status).toBe(200);
      expect(a.body.accepted).toBe(3);
      expect(a.body.results.map((r: any) => r.status)).toEqual(['delivered', 'delivered', 'delivered']);
    });

    it('without a wait nothing changes: 202 pending at once', async () => {
      const a = await enqueue(uniq('cfg'), '/ok');
      expect(a.status).toBe(202);
      expect(a.body.status).toBe('pending');
      expect(a.headers.get('howk-wait')).toBeNull();
    });

    it('a malformed wait is a 400 naming wait, and nothing is enqueued', async () => {
      const config = uniq('cfg');
      for (const o of [{ wait: 'soon' }, { wait: '-1s' }, { wait: '5m' }, { prefer: 'wait=forever' }]) {
        const a = await enqueue(config, '/ok', o);
        expect(a.status).toBe(400);
        expect(a.body.error).toMatchObject({ code: 'invalid_request', field: 'wait' });
      }
      // A webhook enqueued after them is the config's first and only record.
      const ok = await enqueue(config, '/ok');
      await waitFor(() => h.pending().some((r) => r.value?.includes(ok.body.webhook_id)));
      expect(h.pending().filter((r) => r.key === config)).toHaveLength(1);
    });

    it('as an attacker: a huge wait is cut to api.sync_max_wait, and past api.sync_max_waiting a wait is not granted', async () => {
      const config = uniq('cfg');
      const key = await h.boundKey(config);
      // Four requests, per_key_parallelism 1: the receiver holds each 1.5 s, so the three granted waits all run when the fourth comes.
      const answers = await Promise.all(
        [0, 1, 2, 3].map((i) => new Promise<Answer>((r) => setTimeout(r, i * 150)).then(() => enqueue(config, '/sleep/1500', { wait: '86400s', key }))),
      );
      const busy = answers.filter((a) => a.headers.get('howk-wait') === 'busy');
      expect(busy).toHaveLength(1);
      expect(busy[0]!.status).toBe(202);
      expect(busy[0]!.body.status).toBe('pending');
      const granted = answers.filter((a) => a.headers.get('howk-wait') !== 'busy');
      for (const a of granted) expect(a.headers.get('preference-applied')).toBe('wait=4');
      // Every webhook was accepted and is delivered, granted or not.
      for (const a of answers) await waitFor(() => rx.byWebhook().get(a.body.webhook_id), { what: 'delivery' });
    }, 30_000);

    it("as an attacker: a key bound to config A cannot wait on config B, nor learn B's outcomes", async () => {
      const [a, b] = [uniq('cfgA'), uniq('cfgB')];
      const keyA = await h.boundKey(a);
      const refused = await enqueue(b, '/ok', { wait: '4s', key: keyA });
      expect(refused.status).toBe(403);
      expect(h.pending().some((r) => r.key === b)).toBe(false);
      // Side by side, each wait reports its own webhook only.
      const [ra, rb] = await Promise.all([enqueue(a, '/ok', { wait: '4s', key: keyA }), enqueue(b, '/bad', { wait: '4s' })]);
      expect(ra.body).toMatchObject({ status: 'delivered' });
      expect(rb.body).toMatchObject({ status: 'dead_lettered' });
      expect(Object.keys(ra.body).sort()).toEqual(['outcome', 'status', 'webhook_id']);
      expect(JSON.stringify(ra.body)).not.toContain(rb.body.webhook_id);
    });
  });
