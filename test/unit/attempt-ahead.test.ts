import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../core/config/load';
import type { Webhook } from '../../core/domain/webhook';
import { MemoryGuards } from '../../core/memory/guards';
import { createAttempter } from '../../core/pipeline/attempt';
import { guardParams } from '../../core/pipeline/guard-params';
import type { Logger } from '../../core/ports/logger';
import type { AdmitRequest, Admission, GuardParams } from '../../core/ports/guards';
import type { DeliveryRequest, Sender } from '../../core/ports/sender';
import { testWebhook } from '../helpers/webhook';

// Admission asked one webhook ahead in a config lane (core/pipeline/attempt.ts): the next
// webhook's admission overlaps the current send, is used as its decision, and is given back
// when that webhook is not attempted after all.

const P = guardParams(loadConfig({}));
const quiet: Logger = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };
const hook = (n: number, endpoint = 'http://127.0.0.1:9/e'): Webhook => testWebhook({ id: `wh_${n}`, endpoint });

/** Guards that record when each admission was asked, relative to the sends. */
const setup = (overrides: Record<string, unknown> = {}) => {
  const config = loadConfig({ overrides: { 'signing.default_secret': 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', ...overrides } });
  const events: string[] = [];
  const guards = new MemoryGuards();
  const admit = guards.admit.bind(guards);
  guards.admit = (reqs: AdmitRequest[], p: GuardParams): Promise<Admission[]> => {
    for (const r of reqs) events.push(`admit ${r.endpointHash}`);
    return admit(reqs, p);
  };
  let release: (() => void) | undefined;
  const sender: Sender = {
    send: async (req: DeliveryRequest) => {
      events.push(`send ${req.headers['webhook-id']}`);
      // The first send waits until the test lets it go, so what happens meanwhile is visible.
      if (!release) await new Promise<void>((r) => (release = r));
      return { kind: 'response', status: 200, retryAfter: null, bodySnippet: '', durationMs: 1 };
    },
    close: async () => {},
  };
  const attempter = createAttempter({ config, sender, clock: { now: () => Date.now() }, log: quiet, guards });
  return { attempter, guards, events, go: () => release?.() };
};

const until = async (cond: () => boolean) => {
  for (let i = 0; i < 200 && !cond(); i++) await new Promise((r) => setTimeout(r, 5));
  expect(cond()).toBe(true);
};

describe('admission asked ahead in a fast lane', () => {
  it("asks the next webhook's admission while the current one is being sent, and uses it", async () => {
    const { attempter, guards, events, go } = setup({ 'concurrency.max_inflight_per_endpoint': 10 });
    const [a, b] = [hook(1), hook(2)];
    const first = attempter.attempt({ webhook: a, lane: 'fast', next: b });
    await until(() => events.includes('send wh_1'));
    // b was admitted (and counted in flight) before a's send finished.
    await until(() => events.filter((e) => e === 'admit ep').length === 2);
    expect((await guards.endpoint('ep', Date.now(), P)).inflight).toBe(2);
    go();
    expect((await first).kind).toBe('attempted');
    const second = await attempter.attempt({ webhook: b, lane: 'fast' });
    expect(second.kind).toBe('attempted');
    // b's own turn asked nothing more: the admission asked ahead was its decision.
    expect(events.filter((e) => e === 'admit ep')).toHaveLength(2);
    await attempter.settle();
    expect((await guards.endpoint('ep', Date.now(), P)).inflight).toBe(0);
  });

  it('gives back what an admission asked ahead counted when that webhook is not attempted (a stop)', async () => {
    const { attempter, guards, events, go } = setup({ 'concurrency.max_inflight_per_endpoint': 10 });
    const [a, b] = [hook(1), hook(2)];
    const first = attempter.attempt({ webhook: a, lane: 'fast', next: b });
    await until(() => events.includes('send wh_1') && events.filter((e) => e === 'admit ep').length === 2);
    go();
    await first;
    await attempter.settle();
    expect((await guards.endpoint('ep', Date.now(), P)).inflight).toBe(1);
    attempter.discard(b);
    await new Promise((r) => setTimeout(r, 20));
    await attempter.settle();
    expect((await guards.endpoint('ep', Date.now(), P)).inflight).toBe(0);
  });

  it('asks nothing ahead in the slow lane', async () => {
    // Without an endpoint limit the slow lane simply delivers (no 'recovered' to the fast lane).
    const { attempter, events, go } = setup({ 'concurrency.max_inflight_per_endpoint': 0 });
    const first = attempter.attempt({ webhook: hook(1), lane: 'slow', next: hook(2) });
    await until(() => events.includes('send wh_1'));
    expect(events.filter((e) => e === 'admit ep')).toHaveLength(1);
    go();
    await first;
  });
});
