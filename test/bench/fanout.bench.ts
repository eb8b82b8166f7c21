// Fan-out benchmark: Svix messages, each fanned out to BENCH_FANOUT endpoints, next to the same
// number of webhooks enqueued one per request, on one stack in one run (howk-api, howk-worker,
// howk-scheduler as child processes on real Kafka + Redis, a local receiver).
//
//   npm run bench:fanout                             # starts Kafka + Redis unless given
//   KAFKA_BROKERS=127.0.0.1:19092 REDIS_URL=redis://127.0.0.1:16379 npx tsx test/bench/fanout.bench.ts
//
// Knobs (env; docs/BENCHMARKS.md):
//   BENCH_MESSAGES (1000)    messages of the fan-out phase; the single phase enqueues
//                            BENCH_MESSAGES x BENCH_FANOUT webhooks, one per request
//   BENCH_FANOUT (10)        endpoints of each application (every message reaches them all)
//   BENCH_APPS (10)          applications the messages rotate over
//   BENCH_CONCURRENCY (16)   requests in flight in either phase
//   BENCH_WARMUP (200)       messages (and as many x BENCH_FANOUT single webhooks) before timing
//   BENCH_TIMEOUT_S (180)    each phase fails when not everything is delivered by then
//   BENCH_REDIS_DB (9)       Redis database of the run (flushed at start)
//
// Each phase reports webhooks delivered per second (first request → last arrival) and the CPU
// every process spent per 1,000 webhooks delivered. Exits 1 when a phase does not deliver every
// webhook in time or a sampled signature does not verify. Only 127.0.0.1 is used.
import { randomBytes } from 'node:crypto';
import { Agent, request } from 'undici';
import { envInt, infraPorts, loopbackInfra, runNames } from './bench-env';
import { createApiKey, endRun, flushDb, hardDeadline, hasStarted, logFailure } from './bench-run';
import { apiReady, fmt, freePort, log, pidListening, serviceEnv, setLogTag, startProcess, systemTicks, waitUntil, sleep, type Svc } from './busy-harness';
import { enqueueAll, type Route } from './busy-load';
import { startE2eCpu } from './e2e-cpu';
import { startE2eReceiver, type E2eReceiver } from './e2e-receiver';

setLogTag('fanout');
const MESSAGES = Math.max(1, envInt('BENCH_MESSAGES', 1000));
const FANOUT = Math.max(1, envInt('BENCH_FANOUT', 10));
const APPS = Math.max(1, envInt('BENCH_APPS', 10));
const CONCURRENCY = Math.max(1, envInt('BENCH_CONCURRENCY', 16));
const WARMUP = envInt('BENCH_WARMUP', 200);
const TIMEOUT_MS = envInt('BENCH_TIMEOUT_S', 180) * 1000;
const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const PAYLOAD = JSON.stringify({ type: 'invoice.paid', data: { id: 'inv_0001', amount: 4200, currency: 'eur', note: 'x'.repeat(120) } });

const infra = loopbackInfra(envInt('BENCH_REDIS_DB', 9), 'run `npm run bench:fanout` (starts Kafka + Redis) or export them.');
const { runId, topics, logDir } = runNames('fanout');

type Ctx = { api: string; agent: Agent; apiKey: string; rx: E2eReceiver; svcs: Svc[]; procs: { name: string; pid: number | undefined }[] };

const call = async (c: Ctx, method: 'POST' | 'GET', path: string, body?: unknown): Promise<{ status: number; json: any }> => {
  const res = await request(`${c.api}${path}`, {
    method,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${c.apiKey}` },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    dispatcher: c.agent,
  });
  const text = await res.body.text();
  return { status: res.statusCode, json: text ? JSON.parse(text) : null };
};

/** howk-api first (it creates the topics), then the worker and the scheduler. */
const startServices = async (c: Ctx, env: Record<string, string>): Promise<void> => {
  const api = startProcess('api', 'workers/api/main.ts', env, logDir);
  c.svcs.push(api);
  await waitUntil('howk-api /ready', 90_000, () => apiReady(c.api, c.agent), c.svcs);
  const worker = startProcess('worker', 'workers/worker/main.ts', env, logDir);
  const scheduler = startProcess('scheduler', 'workers/scheduler/main.ts', env, logDir);
  c.svcs.push(worker, scheduler);
  for (const s of [worker, scheduler]) await waitUntil(`howk-${s.name} to start`, 90_000, hasStarted(s), c.svcs);
  const ports = infraPorts(infra);
  c.procs = [
    { name: 'howk-api', pid: api.child.pid },
    { name: 'howk-worker', pid: worker.child.pid },
    { name: 'howk-scheduler', pid: scheduler.child.pid },
    { name: 'kafka broker', pid: pidListening(ports.kafka) },
    { name: 'redis-server', pid: pidListening(ports.redis) },
  ];
};

/** `apps` applications of FANOUT endpoints each, under `path` on the receiver, signing with SECRET. Their ids. */
const makeApps = async (c: Ctx, apps: number, path: string): Promise<string[]> => {
  const ids: string[] = [];
  for (let a = 0; a < apps; a++) {
    const app = await call(c, 'POST', '/api/v1/app', { name: `${path}-${a}` });
    if (app.status !== 201) throw new Error(`POST /api/v1/app: ${app.status} ${JSON.stringify(app.json)}`);
    for (let e = 0; e < FANOUT; e++) {
      const ep = await call(c, 'POST', `/api/v1/app/${app.json.id}/endpoint`, { url: `${c.rx.urls[0]}${path}/a${a}/e${e}`, secret: SECRET });
      if (ep.status !== 201) throw new Error(`POST endpoint: ${ep.status} ${JSON.stringify(ep.json)}`);
    }
    ids.push(app.json.id);
  }
  return ids;
};

/** Sends `n` messages over the applications, CONCURRENCY in flight. Returns the failures. */
const sendMessages = async (c: Ctx, apps: string[], n: number): Promise<number> => {
  let next = 0;
  let failures = 0;
  const lane = async () => {
    for (let i = next++; i < n; i = next++) {
      const r = await call(c, 'POST', `/api/v1/app/${apps[i % apps.length]}/msg`, { eventType: 'invoice.paid', payload: JSON.parse(PAYLOAD) });
      if (r.status !== 202) {
        failures++;
        if (failures <= 5) log(`message ${i}: ${r.status} ${JSON.stringify(r.json).slice(0, 200)}`);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, n) }, lane));
  return failures;
};

/** One-per-request enqueues of `n` webhooks under `path` (configs cfg-0…). Returns the failures. */
const sendSingles = async (c: Ctx, n: number, path: string): Promise<number> => {
  const shape = { batch: 1, concurrency: CONCURRENCY, payloadBytes: PAYLOAD.length, single: true };
  const route = (i: number): Route => ({ config: `single-${i % APPS}`, endpoint: `${c.rx.urls[0]}${path}/c${i % APPS}/e${i % FANOUT}`, cls: 'main' });
  return (await enqueueAll(c.api, c.agent, c.apiKey, n, shape, route, 0, Infinity)).failures;
};

type Phase = { name: string; webhooks: number; rate: number; cpu: [string, string][]; ok: boolean };

/** Times `send` until `webhooks` more have arrived than before it; the CPU of every process over that window. */
const phase = async (c: Ctx, name: string, webhooks: number, send: () => Promise<number>): Promise<Phase> => {
  const before = c.rx.arrivals.size;
  const busyBefore = await busyNow();
  const cpu = startE2eCpu(c.procs);
  const tStart = performance.now();
  const failures = await send();
  let ok = failures === 0;
  try {
    await waitUntil(`${name}: ${webhooks} deliveries`, TIMEOUT_MS, () => c.rx.arrivals.size - before >= webhooks, c.svcs);
  } catch (e) {
    log(String((e as Error).message));
    ok = false;
  }
  const arrived = [...c.rx.arrivals.values()].slice(before);
  const tEnd = arrived.length ? Math.max(...arrived) : performance.now();
  const rows = cpu.stop()({ tStart, tEnd, delivered: arrived.length, busyBefore, mine: c.svcs.map((s) => s.child.pid ?? -1) });
  return { name, webhooks: arrived.length, rate: (arrived.length / (tEnd - tStart)) * 1000, cpu: rows, ok };
};

const busyNow = async (): Promise<number> => {
  const a = systemTicks();
  await sleep(1000);
  const b = systemTicks();
  return ((b.busy - a.busy) / Math.max(1, b.total - a.total)) * 100;
};

const report = (phases: Phase[]): void => {
  log(`fan-out ${FANOUT}, ${fmt(MESSAGES)} messages over ${APPS} applications vs ${fmt(MESSAGES * FANOUT)} single enqueues, ${CONCURRENCY} requests in flight`);
  for (const p of phases) {
    log(`--- ${p.name}: ${fmt(p.webhooks)} webhooks delivered, ${fmt(p.rate)} webhooks/s`);
    for (const [k, v] of p.cpu) log(`  ${k.padEnd(24)} ${v}`);
  }
  const [single, fan] = phases;
  if (single && fan) log(`fan-out / single, webhooks delivered per second: ${(fan.rate / single.rate).toFixed(2)}x`);
};

const main = async (): Promise<number> => {
  log(`run ${runId}: service logs in ${logDir}`);
  await flushDb(infra.redisUrl);
  const rx = await startE2eReceiver(SECRET, 1);
  const apiPort = await freePort();
  const env = { ...serviceEnv({ apiPort, brokers: infra.brokers, runId, redisUrl: infra.redisUrl, topics, secret: SECRET }), HOWK_SECRETS_KEY: randomBytes(32).toString('base64') };
  const c: Ctx = { api: `http://127.0.0.1:${apiPort}`, agent: new Agent({ connections: CONCURRENCY, keepAliveTimeout: 60_000 }), apiKey: '', rx, svcs: [], procs: [] };
  try {
    c.apiKey = await createApiKey(env, 'admin', 'bench-fanout');
    await startServices(c, env);
    const warmApps = await makeApps(c, 1, '/warm');
    const apps = await makeApps(c, APPS, '/fan');
    if (WARMUP > 0) {
      await Promise.all([sendMessages(c, warmApps, WARMUP), sendSingles(c, WARMUP * FANOUT, '/warm')]);
      await waitUntil('the warm-up deliveries', 90_000, () => rx.counts().warm >= 2 * WARMUP * FANOUT, c.svcs);
      log(`warm-up: ${fmt(rx.counts().warm)} webhooks delivered`);
    }
    const phases = [
      await phase(c, 'single enqueues', MESSAGES * FANOUT, () => sendSingles(c, MESSAGES * FANOUT, '/single')),
      await phase(c, `messages x ${FANOUT} endpoints`, MESSAGES * FANOUT, () => sendMessages(c, apps, MESSAGES)),
    ];
    report(phases);
    const { badSignatures, sampled, duplicates } = rx.counts();
    log(`signatures: ${sampled} sampled, ${badSignatures} bad; duplicates ${duplicates}`);
    return phases.every((p) => p.ok) && !badSignatures ? 0 : 1;
  } catch (e) {
    logFailure(e, c.svcs);
    return 1;
  } finally {
    rx.refuse();
    await endRun({ svcs: c.svcs, agent: c.agent, closeReceiver: rx.close, brokers: infra.brokers, runId, topics, keepTopics: process.env.BENCH_KEEP_TOPICS === '1' });
  }
};

hardDeadline(2 * TIMEOUT_MS + 240_000);
process.exit(await main());
