import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

// The chaos receiver: records every delivery (per webhook, per connection) for the books and
// the duplicate breakdown (duplicates.ts).

/** How the receiver treats a webhook: its fate without any chaos. */
export type Kind = 'ok' | 'flaky' | 'bad' | 'exhaust';
/** flaky answers 503 to its first attempts, so it is mid-retry for seconds. */
export const FLAKY_FAILURES = 3;

export type Receiver = Awaited<ReturnType<typeof chaosReceiver>>;
/** A 2xx the receiver gave: when, to which attempt (x-webhook-attempt), on which connection. */
export type Answer = { at: number; attempt: number; conn: number };

export const chaosReceiver = async () => {
  const byId = new Map<string, { requests: number; ok: number; first?: number; log?: string[]; oks?: Answer[] }>();
  const times: number[] = [];
  const okTimes: number[] = [];
  // Each connection's number and when it closed: a worker killed with -9 closes its connections at once.
  const conns = new WeakMap<object, number>();
  const closedAt = new Map<number, number>();
  let connections = 0;
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const kind = (req.url ?? '/ok').split('/')[1] as Kind;
      const attempt = Number(req.headers['x-webhook-attempt'] ?? 1);
      const status = kind === 'bad' ? 400 : kind === 'exhaust' ? 503 : kind === 'flaky' && attempt <= FLAKY_FAILURES ? 503 : 200;
      const id = String(req.headers['webhook-id']);
      const now = Date.now();
      const e = byId.get(id) ?? { requests: 0, ok: 0, first: now };
      e.requests++;
      times.push(now);
      if (status === 200) {
        e.ok++;
        okTimes.push(now);
        (e.oks ??= []).push({ at: now, attempt, conn: conns.get(req.socket) ?? 0 });
      }
      // HOWK_CHAOS_TRACE=1: every answer per webhook, to tell where duplicates come from.
      // Always for the kinds answered more than once by design: a lost one's answers explain it.
      if (process.env.HOWK_CHAOS_TRACE || kind !== 'ok') (e.log ??= []).push(`${now}:a${attempt}:${status}`);
      byId.set(id, e);
      res.writeHead(status, { 'content-type': 'text/plain' }).end(status === 200 ? 'ok' : 'no');
    });
  });
  server.on('connection', (sock) => {
    const n = ++connections;
    conns.set(sock, n);
    sock.on('close', () => closedAt.set(n, Date.now()));
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: (kind: Kind, shard: number) => `http://127.0.0.1:${port}/${kind}/${shard}`,
    byId,
    closedAt,
    /** Requests that reached the receiver in [from, to). */
    requestsBetween: (from: number, to: number) => times.filter((t) => t >= from && t < to).length,
    /** 2xx answers given in [from, to). */
    okBetween: (from: number, to: number) => okTimes.filter((t) => t >= from && t < to).length,
    /** First 2xx answered at or after `t`. */
    firstOkAfter: (t: number) => okTimes.find((x) => x >= t),
    /** Longest time without a 2xx between two deliveries, from `from` on (up to `to`). */
    longestStall: (from: number, to = Infinity) => {
      let max = 0;
      for (let i = 1; i < okTimes.length; i++) if (okTimes[i]! >= from && okTimes[i - 1]! < to) max = Math.max(max, okTimes[i]! - okTimes[i - 1]!);
      return max;
    },
    /** The times without a 2xx longer than `min` ms, from `from` on: [start, end]. */
    gaps: (from: number, min: number) => {
      const out: [number, number][] = [];
      for (let i = 1; i < okTimes.length; i++) if (okTimes[i]! >= from && okTimes[i]! - okTimes[i - 1]! > min) out.push([okTimes[i - 1]!, okTimes[i]!]);
      return out;
    },
    close: () => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))),
  };
};
