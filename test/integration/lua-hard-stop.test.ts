import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../core/config/load';
import { createRedis } from '../../workers/redis/client';
import { TEST_SECRET } from '../helpers/fleet';
import { dropTopics } from '../helpers/drop-topics';
import { requireEnv, uniq, waitFor } from '../helpers/env';
import { redisUrlOf, useRedisDb } from '../helpers/redis-db';
import { freePort, spawnRole, stopProc, type Proc } from '../helpers/procs';
import { startReceiver, type Receiver } from '../helpers/receiver';

// Scripts that escaped the CPU deadline (code running with Lua's hooks off, or one C call
// that never returns) froze the whole process that ran them. howk-api and howk-worker run
// here as processes on real Kafka + Redis (a db of its own), so a frozen one fails the test instead of
// freezing it. Each script must end as script_timeout within its deadline plus a bounded
// margin, through POST /config/:id/script/test, /incoming/:name and a delivery, while the api
// keeps answering /health.

const redisDb = useRedisDb();
const LUA_TIMEOUT_MS = 300;
/** The in-VM deadline, or the pool's hard stop (500 ms past it), plus slack for a loaded machine. */
const BOUND_MS = LUA_TIMEOUT_MS + 500 + 5000;

const SCRIPTS: Record<string, string> = {
  gc: "json.array_mt.__gc = function() while true do end end\nlocal a = json.decode('[1, 2]')\na = nil\ncollectgarbage()\nwhile true do end",
  xpcall: "xpcall(function() error('x') end, function() while true do end end)",
  close: 'local x <close> = setmetatable({}, { __close = function() while true do end end })\nwhile true do end',
  // One C call the VM cannot interrupt: only terminating its thread stops it.
  pattern: "local s = string.rep('a', 30000)\nreturn s:find('.-.-.-b')",
};

describe('Lua scripts that escape the in-VM deadline stop anyway (howk-api, howk-worker as processes)', () => {
  let rx: Receiver;
  let dir: string;
  let api: string;
  let workerMetrics: string;
  let topics: Record<string, string>;
  const procs: Proc[] = [];
  const health: number[] = [];
  let probing = true;
  let probe: Promise<void>;
  const json = (body: unknown): RequestInit => ({ method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

  // Its timeout is above the sum of the waits inside (90 s for /ready, 60 s for the warm-up): a slow start fails on the wait that ran out, which names it.
  beforeAll(async () => {
    rx = await startReceiver();
    dir = await mkdtemp(join(tmpdir(), 'howk-lua-hard-stop-'));
    for (const [name, code] of Object.entries(SCRIPTS)) await writeFile(join(dir, `${name}.lua`), `assert(howk.post('${rx.url('/never')}', {}))\n${code}\n`);
    const redis = createRedis(redisUrlOf(redisDb()));
    await redis.flushdb();
    await redis.quit();
    const runId = uniq('lua-hard-stop');
    topics = Object.fromEntries(Object.keys(loadConfig({ env: {} }).kafka.topics).map((k) => [k, `${runId}.${k}`]));
    const port = await freePort();
    api = `http://127.0.0.1:${port}`;
    const env: Record<string, string> = {
      HOWK_API_HOST: '127.0.0.1',
      HOWK_API_PORT: String(port),
      HOWK_API_AUTH_ENABLED: 'false',
      HOWK_KAFKA_BROKERS: requireEnv('KAFKA_BROKERS'),
      HOWK_KAFKA_CONSUMER_GROUP: `${runId}-workers`,
      HOWK_REDIS_URL: redisUrlOf(redisDb()),
      HOWK_SIGNING_DEFAULT_SECRET: TEST_SECRET,
      HOWK_DELIVERY_ALLOWED_NETWORKS: '127.0.0.1/32',
      HOWK_TRANSFORMER_SCRIPT_DIRS: dir,
      HOWK_LUA_TIMEOUT: `${LUA_TIMEOUT_MS}ms`,
      HOWK_LOG_LEVEL: 'warn',
    };
    for (const [k, v] of Object.entries(topics)) env[`HOWK_KAFKA_TOPICS_${k.toUpperCase()}`] = v;
    procs.push(spawnRole('api', env));
    await waitFor(async () => (await fetch(`${api}/ready`).catch(() => undefined))?.ok, { timeoutMs: 90_000, intervalMs: 200, what: `howk-api /ready\n${procs[0]!.output()}` });
    const metricsPort = await freePort();
    workerMetrics = `http://127.0.0.1:${metricsPort}/metrics`;
    procs.push(spawnRole('worker', { ...env, HOWK_METRICS_PORT: String(metricsPort) }));
    // Each process starts its Lua threads on first use: warm them up with harmless runs, so
    // the bounds below time script runs, not thread start-up.
    expect((await fetch(`${api}/config/hs-warm/script/test`, json({ payload: {}, script: 'local x = 1' }))).status).toBe(200);
    const put = await fetch(`${api}/config/hs-warm/script`, { method: 'PUT', headers: { 'content-type': 'text/plain' }, body: "request.headers['x-warm'] = '1'" });
    expect(put.status).toBe(200);
    const warm = await fetch(`${api}/webhooks/hs-warm/enqueue`, json({ endpoint: rx.url('/warm'), payload: {} }));
    expect(warm.status).toBe(202);
    await waitFor(() => rx.received.find((r) => r.path === '/warm'), { timeoutMs: 60_000, what: 'the warm-up delivery' });
    // /health every 100 ms for the whole file: the slowest answer is checked at the end.
    probe = (async () => {
      while (probing) {
        const t0 = performance.now();
        const ok = await fetch(`${api}/health`, { signal: AbortSignal.timeout(10_000) }).then(
          (r) => r.ok,
          () => false,
        );
        health.push(ok ? performance.now() - t0 : Infinity);
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
  }, 200_000);

  afterAll(async () => {
    probing = false;
    await probe;
    for (const p of procs.reverse()) await stopProc(p);
    await rx?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
    if (topics) await dropTopics(Object.values(topics));
  });

  const timed = async (path: string, init: RequestInit) => {
    const t0 = performance.now();
    const res = await fetch(`${api}${path}`, { ...init, signal: AbortSignal.timeout(30_000) });
    return { res, body: (await res.json()) as any, ms: performance.now() - t0 };
  };

  it.each(Object.keys(SCRIPTS))('%s: POST /config/:id/script/test answers script_timeout within the deadline + margin', async (name) => {
    const { res, body, ms } = await timed('/config/hs-dry/script/test', json({ payload: {}, script: SCRIPTS[name] }));
    expect(res.status).toBe(422);
    expect(body.error.code).toBe('script_timeout');
    expect(ms).toBeLessThan(BOUND_MS);
  });

  it.each(Object.keys(SCRIPTS))('%s: as a transformer, /incoming answers script_timeout within the deadline + margin; nothing is enqueued', async (name) => {
    const { res, body, ms } = await timed(`/incoming/${name}`, json({}));
    expect(res.status).toBe(422);
    expect(body.error.code).toBe('script_timeout');
    expect(ms).toBeLessThan(BOUND_MS);
  });

  it.each(Object.keys(SCRIPTS))('%s: as a delivery script, the webhook dead-letters script_timeout and the worker goes on delivering', async (name) => {
    const config = `hs-${name}`;
    const put = await fetch(`${api}/config/${config}/script`, { method: 'PUT', headers: { 'content-type': 'text/plain' }, body: SCRIPTS[name] });
    expect(put.status, await put.clone().text()).toBe(200);
    const enqueue = async (cfg: string, path: string) => {
      const r = await timed(`/webhooks/${cfg}/enqueue`, json({ endpoint: rx.url(path), payload: { n: 1 } }));
      expect(r.res.status).toBe(202);
      return r.body.webhook_id as string;
    };
    const t0 = performance.now();
    const id = await enqueue(config, '/never');
    const dl = await waitFor(
      async () => {
        const r = await fetch(`${api}/deadletter/${id}`);
        return r.ok ? ((await r.json()) as { reason_type: string }) : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 100, what: `dead letter of ${id}` },
    );
    expect(dl.reason_type).toBe('script_timeout');
    // Enqueue, consume and dead-letter on a shared machine: a generous bound, still far below "never".
    expect(performance.now() - t0).toBeLessThan(15_000);
    // The attempt itself, as the worker measured it around the script run.
    const history = await waitFor(
      async () => {
        const st = (await (await fetch(`${api}/webhooks/${id}/status`)).json()) as { history?: { duration_ms: number }[] };
        return st.history?.length ? st.history : undefined;
      },
      { timeoutMs: 10_000, what: `status history of ${id}` },
    );
    expect(history.at(-1)!.duration_ms).toBeLessThan(BOUND_MS);
    // The worker is not stuck: a webhook of another config is delivered right after.
    const ok = await enqueue(`hs-ok-${name}`, `/ok-${name}`);
    await waitFor(() => rx.received.find((r) => r.headers['webhook-id'] === ok), { timeoutMs: 15_000, what: `delivery of ${ok}` });
  });

  it('the Lua metrics count the runs and the threads killed; the dead letters by reason', async () => {
    const count = (text: string, series: string) =>
      text
        .split('\n')
        .filter((l) => l.startsWith(series))
        .reduce((n, l) => n + Number(l.split(' ').at(-1)), 0);
    const a = await (await fetch(`${api}/metrics`)).text();
    // The pattern script ran twice on the api (script test, /incoming): only a kill stops it.
    expect(count(a, 'howk_lua_kills_total')).toBeGreaterThanOrEqual(2);
    expect(count(a, 'howk_lua_run_seconds_count{outcome="killed"}')).toBe(count(a, 'howk_lua_kills_total'));
    expect(count(a, 'howk_lua_run_seconds_count{outcome="ok"}')).toBeGreaterThanOrEqual(1);
    const w = await (await fetch(workerMetrics)).text();
    expect(count(w, 'howk_dead_letters_total{reason="script_timeout"}')).toBe(Object.keys(SCRIPTS).length);
    expect(count(w, 'howk_lua_kills_total')).toBeGreaterThanOrEqual(1);
  });

  it('the api answered /health all along, and no escaped script was sent anything', async () => {
    expect(health.length).toBeGreaterThan(10);
    expect(Math.max(...health)).toBeLessThan(2000);
    expect(rx.received.filter((r) => r.path === '/never')).toHaveLength(0);
  });
});
