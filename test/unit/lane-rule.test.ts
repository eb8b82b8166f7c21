import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../core/config/load';
import type { Webhook } from '../../core/domain/webhook';
import { MemoryGuards } from '../../core/memory/guards';
import { createAttempter } from '../../core/pipeline/attempt';
import { guardParams } from '../../core/pipeline/guard-params';
import type { Logger } from '../../core/ports/logger';
import type { DeliveryRequest, DeliveryResponse, Sender } from '../../core/ports/sender';
import { testWebhook } from '../helpers/webhook';

// The lane rule through the attempter (core/pipeline/admission.ts) on the memory guards: at
// its limit a fast endpoint waits its turn in the fast lane, a slow one is diverted.

const quiet: Logger = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };
const hook = (n: number): Webhook => testWebhook({ id: `wh_${n}`, config_id: `cfg_${n}` });

const setup = () => {
  const config = loadConfig({ overrides: { 'signing.default_secret': 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', 'concurrency.max_inflight_per_endpoint': 1 } });
  const guards = new MemoryGuards();
  const held: (() => void)[] = [];
  const sent: string[] = [];
  const sender: Sender = {
    send: async (req: DeliveryRequest): Promise<DeliveryResponse> => {
      sent.push(String(req.headers['webhook-id']));
      await new Promise<void>((r) => held.push(r));
      return { kind: 'response', status: 200, retryAfter: null, bodySnippet: '', durationMs: 3 };
    },
    close: async () => {},
  };
  const attempter = createAttempter({ config, sender, clock: { now: () => Date.now() }, log: quiet, guards });
  return { attempter, guards, held, sent, params: guardParams(config) };
};

const until = async (cond: () => boolean | Promise<boolean>) => {
  for (let i = 0; i < 400 && !(await cond()); i++) await new Promise((r) => setTimeout(r, 5));
  expect(await cond()).toBe(true);
};

describe('lane rule in the attempter', () => {
  it('makes a fast endpoint at its limit wait its turn (queued, not diverted), then delivers it', async () => {
    const { attempter, guards, held, sent, params } = setup();
    const first = attempter.attempt({ webhook: hook(1), lane: 'fast' });
    await until(() => sent.length === 1);
    const second = attempter.attempt({ webhook: hook(2), lane: 'fast' });
    await until(async () => (await guards.endpoint('ep', Date.now(), params)).concurrency.queued === 1);
    expect(sent).toEqual(['wh_1']);
    held.shift()!();
    expect((await first).kind).toBe('attempted');
    await until(() => sent.length === 2);
    held.shift()!();
    expect((await second).kind).toBe('attempted');
    await attempter.settle();
    expect((await guards.endpoint('ep', Date.now(), params)).concurrency).toMatchObject({ inflight: 0, queued: 0, slow: false });
  });

  it('diverts a measurably slow endpoint at its limit to the slow lane, and the slow lane delivers it', async () => {
    const { attempter, guards, held, sent, params } = setup();
    // One earlier delivery took 2 s: recent latency above the 1 s threshold.
    await guards.admit([{ endpointHash: 'ep', host: '127.0.0.1', configId: 'c', lane: 'fast', now: Date.now(), id: 'wh_earlier' }], params);
    await guards.complete(
      [
        {
          id: 'wh_earlier',
          endpointHash: 'ep',
          host: '127.0.0.1',
          now: Date.now(),
          outcome: 'success',
          probe: false,
          counted: { endpoint: true, domain: false },
          sample: { ms: 2000, drop: false, timeout: false },
        },
      ],
      params,
    );
    const first = attempter.attempt({ webhook: hook(1), lane: 'fast' });
    await until(() => sent.length === 1);
    expect((await attempter.attempt({ webhook: hook(2), lane: 'fast' })).kind).toBe('diverted');
    const slow = attempter.attempt({ webhook: hook(3), lane: 'slow' });
    await until(() => sent.length === 2);
    held.splice(0).forEach((r) => r());
    expect((await first).kind).toBe('attempted');
    expect((await slow).kind).toBe('attempted');
  });
});
