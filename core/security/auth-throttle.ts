import type { Bucket } from '../policy/token-bucket';
import { take } from './rate-limit';

// In front of the password checks of /incoming/:name. Every check first reserves a token
// from its client's bucket and from its transformer's bucket; a check that succeeds gives
// them back, so only failures use the buckets up. Over either limit the request is refused
// before any password work (429). At most `maxConcurrent` checks run at once (the rest 503,
// their tokens spent):
// a bcrypt check costs ~100 ms of CPU, and a flood of them must not starve /health.
// Pure over `now` (tests drive it with a fake clock); one api instance's state, in memory.

export type AuthThrottleSettings = {
  /** Failed checks per second per client address (0 = no limit). */
  clientRate: number;
  clientBurst: number;
  /** Failed checks per second per transformer, all clients together (0 = no limit). */
  transformerRate: number;
  transformerBurst: number;
  /** Password checks running at once (0 = no limit). */
  maxConcurrent: number;
};

export type AuthTicket = {
  /** The check's outcome: a success returns the reserved tokens. Call exactly once. */
  done(ok: boolean): void;
};

export type ThrottleAnswer =
  { ok: true; ticket: AuthTicket } | { ok: false; reason: 'client' | 'transformer'; retryAfterSec: number } | { ok: false; reason: 'busy'; retryAfterSec: number };

const MAX_KEYS = 100_000;

/** Token buckets by key, least recently used first (evicted past MAX_KEYS). */
const bucketMap = (rate: number, burst: number) => {
  const m = new Map<string, Bucket>();
  const put = (key: string, b: Bucket) => {
    m.delete(key);
    m.set(key, b);
    if (m.size > MAX_KEYS) m.delete(m.keys().next().value as string);
  };
  return {
    take(key: string, now: number): { ok: true } | { ok: false; waitMs: number } {
      if (rate <= 0) return { ok: true };
      const t = take(m.get(key), now, rate, burst);
      put(key, t.bucket);
      return t.ok ? { ok: true } : { ok: false, waitMs: t.waitMs };
    },
    give(key: string): void {
      const b = m.get(key);
      if (rate <= 0 || !b) return;
      m.set(key, { tokens: Math.min(burst, b.tokens + 1), at: b.at });
    },
  };
};

const seconds = (ms: number) => Math.max(1, Math.ceil(ms / 1000));

export const createAuthThrottle = (s: AuthThrottleSettings) => {
  const clients = bucketMap(s.clientRate, s.clientBurst);
  const transformers = bucketMap(s.transformerRate, s.transformerBurst);
  let running = 0;
  return {
    admit(client: string, transformer: string, now: number): ThrottleAnswer {
      const c = clients.take(client, now);
      if (!c.ok) return { ok: false, reason: 'client', retryAfterSec: seconds(c.waitMs) };
      const t = transformers.take(transformer, now);
      if (!t.ok) {
        clients.give(client);
        return { ok: false, reason: 'transformer', retryAfterSec: seconds(t.waitMs) };
      }
      // A refusal for want of a slot keeps its tokens: a flood of concurrent guesses uses its
      // client's budget up as fast as sequential ones would (and then meets 429).
      if (s.maxConcurrent > 0 && running >= s.maxConcurrent) return { ok: false, reason: 'busy', retryAfterSec: 1 };
      running++;
      let open = true;
      return {
        ok: true,
        ticket: {
          done(ok) {
            if (!open) return;
            open = false;
            running--;
            if (ok) {
              clients.give(client);
              transformers.give(transformer);
            }
          },
        },
      };
    },
    /** Checks running now. */
    running: () => running,
  };
};

export type AuthThrottle = ReturnType<typeof createAuthThrottle>;

/**
 * The client address a limit is keyed by. X-Forwarded-For is a header anyone can send, so
 * by default it is ignored; with `trustForwardedFor` (howk-api behind a proxy that appends
 * the address it saw) the LAST entry is used: earlier entries came from the client.
 */
export const clientAddress = (socketAddress: string | undefined, forwardedFor: string | undefined, trustForwardedFor: boolean): string => {
  if (trustForwardedFor && forwardedFor) {
    const last = forwardedFor
      .split(',')
      .map((p) => p.trim())
      .filter(Boolean)
      .at(-1);
    if (last) return last;
  }
  return socketAddress ?? 'unknown';
};
