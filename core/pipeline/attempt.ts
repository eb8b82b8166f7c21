import type { Config } from '../config/schema';
import { encodeWebhook, type Webhook } from '../domain/webhook';
import { errorMessage } from '../errors/errors';
import type { CircuitOutcome } from '../policy/circuit';
import { classify, type Classification } from '../policy/classify';
import { decide } from '../policy/retry';
import type { Clock } from '../ports/clock';
import type { Admission, Completion, Guards } from '../ports/guards';
import type { DeliveryResponse, Sender } from '../ports/sender';
import { signatureHeaders } from '../signing/outbound';
import type { SecretBox } from '../signing/secret-box';
import { coalesce } from './coalesce';
import { guardParams } from './guard-params';
import { semaphore } from './limiter';
import type { Logger } from './logger';
import type { Attempted } from './outcome-records';
import { sleep } from './scheduler';

export type Lane = 'fast' | 'slow';

/** What happened to one webhook in one pass. Only 'attempted' spends (or defers) an attempt. */
export type Step =
  | { kind: 'attempted'; o: Attempted }
  | { kind: 'parked'; webhook: Webhook; until: number; reason: 'circuit_open' | 'rate_limited'; at: number }
  | { kind: 'diverted'; webhook: Webhook; at: number }
  | { kind: 'returned'; webhook: Webhook; at: number }
  | { kind: 'held'; webhook: Webhook; at: number };

export type AttemptDeps = {
  config: Config;
  sender: Sender;
  clock: Clock;
  log: Logger;
  secretBox?: SecretBox;
  /** Per-config signing secrets valid at a time (core/security/config-secrets), newest first. */
  configSecrets?: (configId: string, at: number) => Promise<string[]>;
  guards?: Guards;
  random?: () => number;
  /** True once the worker is stopping: waits give up and leave their batch uncommitted. */
  isStopping?: () => boolean;
};

const circuitOutcome = (c: Classification): CircuitOutcome => {
  switch (c.class) {
    case 'delivered':
    case 'unrecoverable': // the endpoint answered: it is up
      return 'success';
    case 'retry':
      return c.circuitFailure ? 'failure' : 'neutral';
    default:
      return 'neutral';
  }
};

const GO: Admission = { kind: 'go', probe: false, counted: { endpoint: false, domain: false } };

/** Admission (guards), signing, sending, classification and decision for one webhook. */
export const createAttempter = (d: AttemptDeps) => {
  const { config } = d;
  const rand = d.random ?? Math.random;
  const gate = semaphore(config.delivery.max_concurrency);
  const params = guardParams(config);
  const guards = d.guards;
  const admit = guards ? coalesce((reqs: Parameters<Guards['admit']>[0]) => guards.admit(reqs, params)) : undefined;
  const complete = guards ? coalesce((done: Completion[]) => guards.complete(done, params).then(() => done.map(() => undefined))) : undefined;
  const pendingCompletions = new Set<Promise<unknown>>();

  // A per-request secret wins, then the config's secrets (several during a rotation), then the default.
  const secretsOf = async (w: Webhook): Promise<string[]> => {
    if (w.signing_secret && d.secretBox) return [await d.secretBox.open(w.signing_secret)];
    const own = d.configSecrets ? await d.configSecrets(w.config_id, d.clock.now()) : [];
    if (own.length) return own;
    return config.signing.default_secret ? [config.signing.default_secret] : [];
  };

  const admission = async (w: Webhook, host: string, lane: Lane): Promise<Admission | { kind: 'held' }> => {
    if (!admit || !guards) return GO;
    for (;;) {
      let a: Admission;
      try {
        a = await admit({ endpointHash: w.endpoint_hash, host, configId: w.config_id, lane, now: d.clock.now() });
      } catch (e) {
        if (!config.circuit_breaker.enabled) {
          d.log.warn('guards unavailable; delivering without limits (fail open)', { error: errorMessage(e) });
          return GO;
        }
        // Circuit fails closed: without Redis nothing is sent; the webhook waits here, in
        // its batch (uncommitted), until the circuit can be read again.
        if (d.isStopping?.()) throw e;
        d.log.warn('circuit unavailable; delivery waits (fail closed)', { error: errorMessage(e) });
        await sleep(500);
        continue;
      }
      if (a.kind === 'wait') {
        await sleep(50);
        continue;
      }
      if (a.kind === 'paused') {
        const scope = { kind: a.scope, id: a.scope === 'endpoint' ? w.endpoint_hash : w.config_id };
        if (await guards.holdPaused(scope, encodeWebhook(w))) return { kind: 'held' };
        continue; // resumed and drained meanwhile: ask again
      }
      return a;
    }
  };

  const send = async (w: Webhook): Promise<DeliveryResponse> => {
    const sent = d.clock.now();
    try {
      const sig = await signatureHeaders({ id: w.id, attempt: w.attempt, timestamp: Math.floor(sent / 1000), body: w.payload, secrets: await secretsOf(w), scheme: config.signing.scheme });
      return await gate(() =>
        d.sender.send({
          url: w.endpoint,
          headers: { ...w.headers, 'content-type': 'application/json', 'user-agent': config.delivery.user_agent, ...sig },
          body: w.payload,
          timeoutMs: config.delivery.timeout,
        }),
      );
    } catch (e) {
      return { kind: 'network', error: errorMessage(e), durationMs: d.clock.now() - sent };
    }
  };

  const attempt = async (w: Webhook, lane: Lane): Promise<Step> => {
    const host = new URL(w.endpoint).hostname;
    const a = await admission(w, host, lane);
    const now = d.clock.now();
    if (a.kind === 'held') return { kind: 'held', webhook: w, at: now };
    if (a.kind === 'park') return { kind: 'parked', webhook: w, until: a.until, reason: a.reason, at: now };
    if (a.kind === 'divert') return { kind: 'diverted', webhook: w, at: now };
    if (a.kind === 'recovered') return { kind: 'returned', webhook: w, at: now };
    if (a.kind !== 'go') throw new Error(`unexpected admission ${a.kind}`);
    const response = await send(w);
    const at = d.clock.now();
    const c = classify(response.kind === 'response' ? { kind: 'response', status: response.status, retryAfter: response.retryAfter } : { kind: response.kind, error: response.error }, at, config.retry.retry_on_status);
    if (complete) {
      const error = response.kind === 'response' ? (response.status >= 400 ? `HTTP ${response.status}` : undefined) : `${response.kind}: ${response.error}`;
      // Fail silent: counters carry a TTL and a missed circuit record costs little.
      const p = complete({ endpointHash: w.endpoint_hash, host, now: at, outcome: circuitOutcome(c), probe: a.probe, counted: a.counted, error }).catch((e) =>
        d.log.warn('guard completion not recorded', { error: errorMessage(e) }),
      );
      pendingCompletions.add(p);
      void p.finally(() => pendingCompletions.delete(p));
    }
    return { kind: 'attempted', o: { webhook: w, response, at, decision: decide(w, c, at, config.retry, rand()) } };
  };

  return { attempt, settle: () => Promise.all([...pendingCompletions]) };
};
