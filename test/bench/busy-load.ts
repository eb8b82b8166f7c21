// Receiver and load generator of busy.bench.ts. The receiver is one node:http server on
// two loopback ports: the "fast" origin answers at once, the "odd" origin (the slow or sick
// endpoint, a host of its own as in production) answers after `oddDelayMs`.
import { createServer, type Server } from 'node:http';
import { createServer as createNetServer, type AddressInfo, type Server as NetServer } from 'node:net';
import { Agent, request } from 'undici';
import { log, sleep, waitUntil, type Svc } from './busy-harness';

export type Receiver = {
  fast: string;
  odd: string;
  /** webhook-id → performance.now() of its first arrival (request head received). */
  arrivals: Map<string, number>;
  duplicates: () => number;
  setOddDelay: (ms: number) => void;
  reset: () => void;
  close: () => Promise<void>;
};

export const startReceiver = async (): Promise<Receiver> => {
  const arrivals = new Map<string, number>();
  let duplicates = 0;
  let oddDelayMs = 0;
  let open = true;
  const server: Server = createServer((req, res) => {
    const at = performance.now();
    req.resume();
    if (!open) return void res.writeHead(503).end();
    const id = String(req.headers['webhook-id']);
    if (arrivals.has(id)) duplicates++;
    else arrivals.set(id, at);
    const answer = () => res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '2' }).end('ok');
    const delay = req.url?.startsWith('/odd') ? oddDelayMs : 0;
    req.on('end', () => (delay > 0 ? setTimeout(answer, delay) : answer()));
  });
  server.keepAliveTimeout = 60_000;
  server.headersTimeout = 65_000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  // The odd origin: its own port, served by the same handler.
  const odd: NetServer = createNetServer((socket) => server.emit('connection', socket));
  await new Promise<void>((r) => odd.listen(0, '127.0.0.1', r));
  return {
    fast: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    odd: `http://127.0.0.1:${(odd.address() as AddressInfo).port}`,
    arrivals,
    duplicates: () => duplicates,
    setOddDelay: (ms) => {
      oddDelayMs = ms;
    },
    reset: () => {
      arrivals.clear();
      duplicates = 0;
    },
    close: async () => {
      open = false;
      server.closeAllConnections();
      odd.close();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
};

// ------------------------------------------------------------------ load ----
/** Where the webhooks of one batch request go: its config id, endpoint URL and a class for the figures. */
export type Route = { config: string; endpoint: string; cls: string };
export type Sent = { start: number; cls: string };
export type EnqueueResult = { accepted: number; requests: number; retries: number; failures: number; ids: Map<string, Sent>; t0: number; tEnd: number };
/** `single`: one webhook per POST /webhooks/:config/enqueue instead of batch requests (batch is then 1). */
export type LoadShape = { batch: number; concurrency: number; payloadBytes: number; single?: boolean };

export const payloadOf = (pad: string, seq: number) =>
  `{"type":"bench.event","seq":${seq},"data":{"user":"u_${seq % 9973}","amount":${seq % 100_000},"currency":"EUR","note":"${pad}"}}`;

/**
 * Posts `count` webhooks in batch requests of `shape.batch`, `shape.concurrency` requests in
 * flight, request c going to `route(c)`; paced at `rate` webhooks/s when rate > 0. Stops
 * starting requests at `deadline` (performance.now()). Records, per accepted id, the start of
 * the request that carried it.
 */
export const enqueueAll = async (
  base: string,
  agent: Agent,
  apiKey: string,
  count: number,
  shape: LoadShape,
  route: (chunk: number) => Route,
  rate: number,
  deadline: number,
): Promise<EnqueueResult> => {
  const t0 = performance.now();
  const st: EnqueueResult = { accepted: 0, requests: 0, retries: 0, failures: 0, ids: new Map(), t0, tEnd: t0 };
  const pad = 'x'.repeat(Math.max(0, shape.payloadBytes - 120));
  const chunks = Math.ceil(count / shape.batch);
  let next = 0;
  let fatal = false;
  const lane = async () => {
    for (;;) {
      const c = next++;
      if (fatal || c >= chunks || performance.now() > deadline) return;
      const from = c * shape.batch;
      const to = Math.min(count, from + shape.batch);
      if (rate > 0) {
        const wait = t0 + (from / rate) * 1000 - performance.now();
        if (wait > 0) await sleep(wait);
      }
      const r = route(c);
      const items: string[] = [];
      for (let i = from; i < to; i++) items.push(`{"endpoint":${JSON.stringify(r.endpoint)},"payload":${payloadOf(pad, i)}}`);
      const body = shape.single ? items[0]! : `{"webhooks":[${items.join(',')}]}`;
      const path = shape.single ? `/webhooks/${r.config}/enqueue` : `/webhooks/${r.config}/enqueue/batch`;
      for (let attempt = 0; ; attempt++) {
        const start = performance.now();
        st.requests++;
        let status = 0;
        let text = '';
        try {
          const res = await request(`${base}${path}`, {
            method: 'POST',
            body,
            headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` },
            dispatcher: agent,
          });
          status = res.statusCode;
          text = await res.body.text();
        } catch (e) {
          text = String(e);
        }
        if (status === 202) {
          const json = JSON.parse(text) as { webhook_id: string; status: string; results?: { webhook_id: string; status: string }[] };
          for (const x of json.results ?? [json]) {
            if (x.status !== 'pending') continue;
            st.ids.set(x.webhook_id, { start, cls: r.cls });
            st.accepted++;
          }
          break;
        }
        const permanent = status >= 400 && status < 500 && status !== 429;
        if (permanent || attempt >= 4 || performance.now() > deadline) {
          st.failures++;
          if (permanent) fatal = true;
          log(`enqueue of chunk ${c} failed for good: ${status} ${text.slice(0, 200)}`);
          break;
        }
        st.retries++;
        if (st.retries <= 5) log(`enqueue answered ${status || 'error'} (${text.slice(0, 160)}); retrying`);
        await sleep(100 * 2 ** attempt);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(shape.concurrency, chunks) }, lane));
  st.tEnd = performance.now();
  return st;
};

export type Delivery = { agent: Agent; apiKey: string; shape: LoadShape; route: (chunk: number) => Route; rx: Receiver; svcs: Svc[] };
/**
 * Posts `count` webhooks to `base` unpaced (no request started after `sendMs`) and waits, at
 * most `waitMs`, until every accepted one has arrived (`what` names the wait in its error).
 */
export const deliverAll = async (d: Delivery, base: string, count: number, what: string, sendMs: number, waitMs: number): Promise<EnqueueResult> => {
  const e = await enqueueAll(base, d.agent, d.apiKey, count, d.shape, d.route, 0, performance.now() + sendMs);
  await waitUntil(what, waitMs, () => arrivedCount(d.rx.arrivals, e.ids) >= e.ids.size, d.svcs);
  return e;
};

/** Warm-up of each target in turn (consumer group joined, code compiled, connections open); the receiver is reset after each. */
export const warmUp = async (d: Delivery, targets: readonly (readonly [string, string])[], count: number): Promise<void> => {
  for (const [name, base] of targets) {
    const w = await deliverAll(d, base, count, `${name} warm-up`, 60_000, 90_000);
    log(`${name} warm-up: ${w.ids.size} delivered`);
    d.rx.reset();
  }
};

/** Every id of `ids` (optionally of one class) that has arrived. */
export const arrivedCount = (arrivals: Map<string, number>, ids: Map<string, Sent>, cls?: (c: string) => boolean): number => {
  let n = 0;
  for (const [id, s] of ids) if ((!cls || cls(s.cls)) && arrivals.has(id)) n++;
  return n;
};

/** Sorted enqueue→arrival latencies (ms) of the arrived ids of the classes `cls` accepts. */
export const latencies = (arrivals: Map<string, number>, ids: Map<string, Sent>, cls: (c: string) => boolean, sentFrom = -Infinity, sentTo = Infinity): number[] => {
  const out: number[] = [];
  for (const [id, s] of ids) {
    if (!cls(s.cls) || s.start < sentFrom || s.start >= sentTo) continue;
    const at = arrivals.get(id);
    if (at !== undefined) out.push(at - s.start);
  }
  return out.sort((a, b) => a - b);
};

/** Arrivals per second of the classes `cls` accepts within [from, to) (performance.now()). */
export const arrivalRate = (arrivals: Map<string, number>, ids: Map<string, Sent>, cls: (c: string) => boolean, from: number, to: number): number => {
  let n = 0;
  for (const [id, s] of ids) {
    if (!cls(s.cls)) continue;
    const at = arrivals.get(id);
    if (at !== undefined && at >= from && at < to) n++;
  }
  return to > from ? n / ((to - from) / 1000) : NaN;
};

/** Last first-arrival among the arrived ids (performance.now()), or NaN. */
export const lastArrival = (arrivals: Map<string, number>, ids: Map<string, Sent>, cls: (c: string) => boolean = () => true): number => {
  let last = NaN;
  for (const [id, s] of ids) {
    if (!cls(s.cls)) continue;
    const at = arrivals.get(id);
    if (at !== undefined && !(at <= last)) last = at;
  }
  return last;
};
