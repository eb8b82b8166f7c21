import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/env';
import { freePort, spawnRole, stopProc, type Proc } from '../helpers/procs';
import { startReceiver, type Received } from '../helpers/receiver';

// howk-dev on its SQLite file (docs/RELIABILITY.md, "The embedded mode"), killed with -9
// again and again while it accepts and delivers: every webhook it answered 202 reaches the
// receiver, a retry never comes before its schedule, and dead letters are still there after
// another kill. Loopback only; no Kafka or Redis.

const N = 2000;
const BATCH = 50;
const KILLS = 4;
const BASE_DELAY_MS = 3000;
const JITTER = 0.2;
type Kind = 'ok' | 'flaky' | 'dead';
const kindOf = (i: number): Kind => (i % 10 === 3 ? 'flaky' : i % 10 === 7 ? 'dead' : 'ok');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('howk-dev keeps what it accepted across kill -9 (process)', () => {
  let dir: string | undefined;
  let dev: Proc | undefined;
  const rxReady = startReceiver((r) => {
    // flaky: its first attempt fails (a retry is scheduled); dead: every attempt fails.
    if (r.path.startsWith('/dead')) return { status: 500 };
    if (r.path.startsWith('/flaky') && r.headers['x-webhook-attempt'] === '1') return { status: 500 };
    return { status: 200 };
  });
  afterAll(async () => {
    if (dev) await stopProc(dev, 'SIGKILL');
    await (await rxReady).close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('delivers every accepted webhook, keeps retry schedules and dead letters through 4 kills', async () => {
    const rx = await rxReady;
    dir = await mkdtemp(join(tmpdir(), 'howk-dev-restart-'));
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const env = {
      HOWK_API_PORT: String(port),
      HOWK_API_HOST: '127.0.0.1',
      HOWK_RETRY_BASE_DELAY: `${BASE_DELAY_MS}ms`,
      HOWK_RETRY_JITTER: String(JITTER),
      HOWK_RECONCILER_RESTORE_DELAY: '500ms',
      HOWK_LOG_LEVEL: 'warn',
    };
    const start = async () => {
      dev = spawnRole('dev', env, ['--data', dir!]);
      const p = dev;
      await waitFor(async () => (await fetch(`${base}/ready`).catch(() => undefined))?.status === 200, {
        timeoutMs: 60_000,
        intervalMs: 100,
        what: `howk-dev ready\n${p.output()}`,
      });
    };
    const kill = async () => {
      dev!.child.kill('SIGKILL');
      await dev!.exited;
    };

    // The client: batches of 50, one at a time; a batch without a 202 is sent again (only
    // the ids of a 202 count as accepted). One endpoint per webhook, so that circuits (which
    // failing endpoints would open) play no part in when a retry comes.
    const accepted = new Map<string, Kind>();
    const client = (async () => {
      for (let from = 0; from < N; from += BATCH) {
        const webhooks = Array.from({ length: BATCH }, (_, k) => {
          const i = from + k;
          const kind = kindOf(i);
          return { endpoint: rx.url(`/${kind}/${i}`), payload: { i }, max_attempts: kind === 'ok' ? 5 : 2 };
        });
        for (;;) {
          const res = await fetch(`${base}/webhooks/restart/enqueue/batch`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ webhooks }),
            signal: AbortSignal.timeout(10_000),
          }).catch(() => null);
          if (res?.status === 202) {
            const out = (await res.json()) as { results: { webhook_id: string }[] };
            out.results.forEach((r, k) => accepted.set(r.webhook_id, kindOf(from + k)));
            break;
          }
          await res?.body?.cancel();
          await sleep(200);
        }
        await sleep(150);
      }
    })();

    await start();
    for (let k = 0; k < KILLS; k++) {
      await sleep(2500 + k * 700);
      await kill();
      await start();
    }
    await client;
    expect(accepted.size).toBe(N);

    const byId = () => {
      const m = new Map<string, Received[]>();
      for (const r of rx.received) {
        const id = String(r.headers['webhook-id']);
        m.set(id, [...(m.get(id) ?? []), r]);
      }
      return m;
    };
    const attemptOf = (r: Received) => Number(r.headers['x-webhook-attempt']);
    // Done: ok and flaky webhooks answered 200 once, dead ones tried their second (last) attempt.
    const done = (reqs: Received[] | undefined, kind: Kind) =>
      !!reqs && (kind === 'dead' ? reqs.some((r) => attemptOf(r) === 2) : reqs.some((r) => kind === 'ok' || attemptOf(r) >= 2));
    const missing = () => {
      const m = byId();
      return [...accepted].filter(([id, kind]) => !done(m.get(id), kind));
    };
    await waitFor(() => missing().length === 0, { timeoutMs: 120_000, intervalMs: 500, what: 'every accepted webhook at the receiver' }).catch(() => undefined);
    expect(missing().map(([id, kind]) => `${id}:${kind}`)).toEqual([]);

    // Retries never came before their schedule: the second attempt of a webhook is at
    // least the backoff (less its jitter) after its first attempt.
    const early: string[] = [];
    let retried = 0;
    for (const [id, reqs] of byId()) {
      const kind = accepted.get(id);
      if (kind !== 'flaky' && kind !== 'dead') continue;
      const first = Math.min(...reqs.filter((r) => attemptOf(r) === 1).map((r) => r.at));
      const second = Math.min(...reqs.filter((r) => attemptOf(r) === 2).map((r) => r.at));
      retried++;
      if (second - first < BASE_DELAY_MS * (1 - JITTER) - 100) early.push(`${id}: ${second - first} ms`);
    }
    expect(retried).toBe(400);
    expect(early).toEqual([]);

    // Dead letters survive one more kill: each dead webhook's dead letter and dead status.
    await sleep(1000);
    await kill();
    await start();
    const dead = [...accepted].filter(([, kind]) => kind === 'dead').map(([id]) => id);
    const found = await Promise.all(dead.map(async (id) => (await fetch(`${base}/deadletter/${id}`)).status));
    expect(found.filter((s) => s !== 200)).toEqual([]);
    const states = await Promise.all(dead.slice(0, 50).map(async (id) => ((await (await fetch(`${base}/webhooks/${id}/status`)).json()) as { state?: string }).state));
    expect(new Set(states)).toEqual(new Set(['exhausted']));
  }, 400_000);
});
