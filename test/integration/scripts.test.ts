import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/env';
import { startTestFleet, TEST_SECRET, type Mode, type TestFleet } from '../helpers/fleet';
import { startReceiver, type Receiver } from '../helpers/receiver';
import { verifyStandardWebhook } from '../helpers/standard-webhooks';

// Per-config delivery scripts (docs/LUA.md): /config/:id/script, the howk.scripts topic, and the
// worker running the script right before signing. Embedded fleet and real Kafka + Redis (a db of its own).

const put = (f: TestFleet, id: string, script: string) =>
  fetch(`${f.baseUrl}/config/${encodeURIComponent(id)}/script`, { method: 'PUT', headers: { 'content-type': 'text/plain' }, body: script });

const scriptSuite = (mode: Mode) =>
  describe(`delivery scripts (${mode})`, () => {
    let f: TestFleet;
    let rx: Receiver;
    beforeAll(async () => {
      rx = await startReceiver((r, nth) => (r.path === '/flaky' && nth <= 2 ? { status: 503 } : { status: 200 }));
      f = await startTestFleet(mode);
    });
    afterAll(async () => {
      await f?.stop();
      await rx?.close();
    });

    const statusOf = async (id: string) => (await fetch(`${f.baseUrl}/webhooks/${id}/status`)).json() as Promise<any>;
    const enqueue = async (config: string, body: unknown) => ((await (await f.post(`/webhooks/${encodeURIComponent(config)}/enqueue`, body)).json()) as any).webhook_id as string;

    it('checks syntax and size on upload; GET and DELETE', async () => {
      expect((await fetch(`${f.baseUrl}/config/s-crud/script`)).status).toBe(404);
      const bad = await put(f, 's-crud', "request.headers['x'] = 1\nlocal = 2\n");
      expect(bad.status).toBe(400);
      const e = ((await bad.json()) as any).error;
      expect(e.code).toBe('script_syntax_error');
      expect(e.line).toBe(2);
      expect(e.message).toMatch(/^script:2:/);
      expect((await put(f, 's-crud', '-- ' + 'x'.repeat(f.config.lua.max_script_bytes))).status).toBe(413);
      const ok = await fetch(`${f.baseUrl}/config/s-crud/script`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ script: "request.headers['X-A'] = 'b'" }),
      });
      expect(ok.status).toBe(200);
      expect(((await ok.json()) as any).sha256).toMatch(/^[0-9a-f]{64}$/);
      const got = (await (await fetch(`${f.baseUrl}/config/s-crud/script`)).json()) as any;
      expect(got.script).toBe("request.headers['X-A'] = 'b'");
      expect((await fetch(`${f.baseUrl}/config/s-crud/script`, { method: 'DELETE' })).status).toBe(200);
      expect((await fetch(`${f.baseUrl}/config/s-crud/script`)).status).toBe(404);
    });

    it('dry-runs a script on a sample payload', async () => {
      const res = await f.post('/config/s-dry/script/test', {
        payload: { amount: 3 },
        headers: { 'X-In': 'yes' },
        script: "request.payload.cents = request.payload.amount * 100\nrequest.headers['X-Out'] = request.headers['x-in']",
      });
      expect(res.status).toBe(200);
      const b = (await res.json()) as any;
      expect(JSON.parse(b.request.body)).toEqual({ amount: 3, cents: 300 });
      expect(b.request.headers['x-out']).toBe('yes');
      expect(typeof b.cpu_ms).toBe('number');
      const err = await f.post('/config/s-dry/script/test', { payload: {}, script: "error('nope')" });
      expect(err.status).toBe(422);
      expect(((await err.json()) as any).error.code).toBe('script_runtime_error');
    });

    it('rewrites body and headers before signing; the stored webhook keeps the original bytes', async () => {
      expect((await put(f, 's-rw', "request.payload.cents = request.payload.amount * 100\nrequest.headers['X-Custom'] = 'value'\nrequest.headers['X-Drop'] = nil")).status).toBe(
        200,
      );
      const id = await enqueue('s-rw', { endpoint: rx.url('/rw'), payload: { amount: 7 }, headers: { 'X-Drop': 'gone', 'X-Keep': 'kept' } });
      const r = await waitFor(() => rx.received.find((x) => x.path === '/rw'), { what: 'scripted delivery' });
      expect(r.headers['webhook-id']).toBe(id);
      expect(JSON.parse(r.body.toString())).toEqual({ amount: 7, cents: 700 });
      expect(r.headers['x-custom']).toBe('value');
      expect(r.headers['x-keep']).toBe('kept');
      expect(r.headers['x-drop']).toBeUndefined();
      expect(verifyStandardWebhook(TEST_SECRET, r.headers as any, r.body)).toBe(true);
      const pending = await waitFor(() => f.records('pending').find((x) => x.value?.includes(id)), { what: 'pending record' });
      expect(pending.value).not.toContain('cents');
      expect(pending.value).not.toContain('X-Custom');
    });

    it('re-runs the script on the ORIGINAL payload at every retry', async () => {
      expect((await put(f, 's-retry', "request.payload.n = request.payload.n + 1\nrequest.headers['X-Seen-Attempt'] = webhook.attempt")).status).toBe(200);
      const id = await enqueue('s-retry', { endpoint: rx.url('/flaky'), payload: { n: 1 } });
      await waitFor(async () => (await statusOf(id)).state === 'delivered', { what: 'delivery at attempt 3' });
      const got = rx.received.filter((x) => x.path === '/flaky');
      expect(got.map((x) => JSON.parse(x.body.toString()).n)).toEqual([2, 2, 2]);
      expect(got.map((x) => x.headers['x-seen-attempt'])).toEqual(['0', '1', '2']);
    });

    it('runs a namespace script for its children only when it applies to children (wh:42:6 → wh)', async () => {
      // Stored without apply_to_children: the parent's own script only.
      expect((await put(f, 'nso', "request.headers['X-Ns'] = webhook.config_id")).status).toBe(200);
      expect(((await (await fetch(`${f.baseUrl}/config/nso/script`)).json()) as any).apply_to_children).toBe(false);
      const res = await fetch(`${f.baseUrl}/config/nsx/script?apply_to_children=true`, {
        method: 'PUT',
        headers: { 'content-type': 'text/plain' },
        body: "request.headers['X-Ns'] = webhook.config_id",
      });
      expect(((await res.json()) as any).apply_to_children).toBe(true);
      await enqueue('nso:42', { endpoint: rx.url('/ns-own'), payload: {} });
      await enqueue('nsx:42:6', { endpoint: rx.url('/ns'), payload: {} });
      const r = await waitFor(() => rx.received.find((x) => x.path === '/ns'), { what: 'namespace delivery' });
      expect(r.headers['x-ns']).toBe('nsx:42:6');
      const own = await waitFor(() => rx.received.find((x) => x.path === '/ns-own'), { what: 'child of a parent-only script' });
      expect(own.headers['x-ns']).toBeUndefined();
    });

    it('refuses an empty script PUT with 400 naming the field, storing nothing', async () => {
      for (const init of [{ body: '' }, { body: '  \n' }, { body: JSON.stringify({ script: '' }), headers: { 'content-type': 'application/json' } }]) {
        const res = await fetch(`${f.baseUrl}/config/s-empty/script`, { method: 'PUT', ...init });
        expect(res.status).toBe(400);
        expect(((await res.json()) as any).error).toMatchObject({ code: 'invalid_request', field: 'script' });
      }
      expect((await fetch(`${f.baseUrl}/config/s-empty/script`)).status).toBe(404);
    });

    it('dead-letters script failures with the Lua reason type, sending nothing', async () => {
      expect((await put(f, 's-err', "error('bad script')")).status).toBe(200);
      expect((await put(f, 's-loop', 'while true do end')).status).toBe(200);
      const a = await enqueue('s-err', { endpoint: rx.url('/never'), payload: {} });
      const b = await enqueue('s-loop', { endpoint: rx.url('/never'), payload: {} });
      const sa = await waitFor(async () => ((await statusOf(a)).state === 'failed' ? statusOf(a) : undefined), { what: 'runtime error dead letter' });
      const sb = await waitFor(async () => ((await statusOf(b)).state === 'failed' ? statusOf(b) : undefined), { what: 'timeout dead letter' });
      expect(sa.dead_reason).toBe('script_runtime_error');
      expect(sb.dead_reason).toBe('script_timeout');
      const dls = await waitFor(
        () => {
          const d = f
            .records('deadletter')
            .map((r) => JSON.parse(r.value!))
            .filter((x: any) => x.webhook_id === a || x.webhook_id === b);
          return d.length >= 2 ? d : undefined;
        },
        { what: 'dead letters' },
      );
      expect(new Map(dls.map((d: any) => [d.webhook_id, d.reason_type]))).toEqual(
        new Map([
          [a, 'script_runtime_error'],
          [b, 'script_timeout'],
        ]),
      );
      expect(dls.find((d: any) => d.webhook_id === a).reason).toMatch(/bad script/);
      expect(rx.received.filter((x) => x.path === '/never')).toHaveLength(0);
    });

    if (mode === 'kafka') {
      it('propagates a PUT to an api started afterwards and to a running worker within 2 s', async () => {
        const other = await startTestFleet(mode, { config: f.config, redisDb: f.redisDb, roles: { api: true } });
        try {
          const body = "request.headers['X-Version'] = 'v2'";
          expect((await put(other, 's-prop', body)).status).toBe(200);
          const t0 = Date.now();
          await waitFor(async () => (await fetch(`${f.baseUrl}/config/s-prop/script`)).status === 200, { timeoutMs: 2000, intervalMs: 20, what: 'script on the first api' });
          expect(Date.now() - t0).toBeLessThan(2000);
          await enqueue('s-prop', { endpoint: rx.url('/prop'), payload: {} });
          const r = await waitFor(() => rx.received.find((x) => x.path === '/prop'), { what: 'delivery with the propagated script' });
          expect(r.headers['x-version']).toBe('v2');
          const late = await startTestFleet(mode, { config: f.config, redisDb: f.redisDb, roles: { api: true } });
          try {
            expect(((await (await fetch(`${late.baseUrl}/config/s-prop/script`)).json()) as any).script).toBe(body);
          } finally {
            await late.stop();
          }
        } finally {
          await other.stop();
        }
      });
    }
  });

scriptSuite('memory');
scriptSuite('kafka');
