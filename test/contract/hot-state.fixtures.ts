import { afterEach, beforeEach, describe } from 'vitest';
import type { AttemptRecord, WebhookStatus } from '../../core/domain/status';
import type { HotState, HotTtls } from '../../core/ports/hot-state';

// Shared pieces of the HotState role contracts: the harness each adapter provides, and builders.
// A suite names the roles it exercises (S); an adapter that implements them can run it.

export type ContractClock = { now(): number; advance?(ms: number): void };

export type HotStateHarness<S = HotState> = {
  state: S;
  clock: ContractClock;
  /** A second client on the same store (its own connection for Redis), for races. Defaults to state. */
  peer?: S;
  cleanup(): Promise<void>;
};

export type MakeHotState<S = HotState> = (opts?: { ttls?: Partial<HotTtls> }) => Promise<HotStateHarness<S>>;

export type ContractContext<S = HotState> = { h: () => HotStateHarness<S>; make: MakeHotState<S> };

/** One role's suite: a harness of its own for each test, cleaned up after it. */
export const roleContract = <S>(title: string, name: string, make: MakeHotState<S>, body: (ctx: ContractContext<S>) => void): void => {
  describe(`${title} contract: ${name}`, () => {
    let harness: HotStateHarness<S>;
    beforeEach(async () => {
      harness = await make();
    });
    afterEach(async () => {
      await harness.cleanup();
    });
    body({ h: () => harness, make });
  });
};

/** Runs `fn` on a harness of its own (e.g. with short TTLs) and always cleans it up. */
export const withHarness = async <S>(ctx: ContractContext<S>, opts: Parameters<MakeHotState<S>>[0], fn: (h: HotStateHarness<S>) => Promise<void>) => {
  const h = await ctx.make(opts);
  try {
    await fn(h);
  } finally {
    await h.cleanup();
  }
};

export const HOUR = 3_600_000;
export const DEFAULT_TTLS: HotTtls = { status_ttl: 168 * HOUR, stats_ttl: 48 * HOUR, retry_data_ttl: 168 * HOUR };

/** Lets time pass: a fake clock jumps, a real store (Redis TTLs) needs real waiting. */
export const elapse = async (clock: ContractClock, ms: number): Promise<void> => {
  if (clock.advance) clock.advance(ms);
  else await new Promise((r) => setTimeout(r, ms));
};

export const fakeClock = (start = Date.UTC(2025, 5, 1, 12, 30)): Required<ContractClock> => {
  let t = start;
  return { now: () => t, advance: (ms) => void (t += ms) };
};

/** A 19-digit updated_at_ns from a ms time plus a sub-ms sequence. */
export const ns = (ms: number, seq = 0): string => `${ms}${String(seq).padStart(6, '0')}`;

export const statusOf = (id: string, updatedAtNs: string, patch: Partial<WebhookStatus> = {}): WebhookStatus => ({
  webhook_id: id,
  config_id: 'cfg_contract',
  endpoint: 'https://example.com/hook',
  endpoint_hash: 'ab'.repeat(16),
  state: 'pending',
  attempts: 0,
  max_attempts: 5,
  created_at: '2025-06-01T12:00:00.000Z',
  last_attempt_at: null,
  last_status_code: null,
  last_error: null,
  next_retry_at: null,
  updated_at_ns: updatedAtNs,
  ...patch,
});

export const attemptOf = (attempt: number, patch: Partial<AttemptRecord> = {}): AttemptRecord => ({
  attempt,
  at: new Date(Date.UTC(2025, 5, 1, 12, 0, attempt)).toISOString(),
  outcome: 'retry',
  status_code: 503,
  error: null,
  duration_ms: 12.5,
  ...patch,
});
