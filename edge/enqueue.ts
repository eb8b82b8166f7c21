import type { Config } from '../core/config/schema';
import { encodeWebhook, type Webhook } from '../core/records/webhook';
import { HowkError, UnavailableError, errorMessage } from '../core/errors/errors';
import type { EnqueueItem } from '../core/domain/enqueue';
import type { EnqueueResult } from '../core/domain/enqueue';
import { webhookBuilder, type Enqueuer } from '../core/pipeline/enqueue';
import { claimKeyed, commitKeyed, releaseKeyed, requestFingerprint, type KeyedHook } from '../core/pipeline/idempotency';
import type { IdempotencyStore } from '../core/ports/hot-state';
import type { Clock } from '../core/ports/clock';
import type { SecretBox } from '../core/signing/secret-box';
import type { Logger } from '../core/ports/logger';
import { GATE_ORIGIN, type AdmitReply, type GateAdmitRequest, type AdmitResult, type GateError, type ReserveReply } from './gate/protocol';
import type { DurableObjectNamespace } from './runtime';
import type { KafkaRestRecord } from '../core/ports/kafka-rest';
import type { RestProducer } from './upstash/kafka';

// The edge's enqueue: the same Webhook records as core/pipeline/enqueue.ts builds, handed to
// the DomainGate of each destination host, which admits and produces them. Idempotency keys
// are claimed in the fleet's Redis first, as howk-api claims them (core/pipeline/idempotency.ts),
// so one key makes one webhook through any door; when Redis is not configured or fails, each
// gate dedupes its host's keys alone. The core enqueue routes call this exactly as they call
// howk-api's enqueuer.

export type EdgeEnqueueDeps = {
  config: Config;
  gates: DurableObjectNamespace;
  /** Produces requests that span several hosts (single-host ones are produced by their gate). */
  producer: RestProducer;
  clock: Clock;
  log: Logger;
  secretBox?: SecretBox;
  retryAfterSec: number;
  /** The fleet's idempotency claims (shared with howk-api); without it each host's gate dedupes alone. */
  idempotency?: IdempotencyStore;
};

export const hostOf = (endpoint: string): string => new URL(endpoint).hostname.toLowerCase();

/** Claims in the fleet's Redis, shared with howk-api; undefined: none made (no Redis, or it failed), the gates dedupe. */
const claimIn = async (d: EdgeEnqueueDeps, configId: string, items: EnqueueItem[], hooks: Webhook[]) => {
  if (!d.idempotency || !hooks.some((w) => w.idempotency_key)) return undefined;
  const keyed: KeyedHook[] = await Promise.all(
    hooks.flatMap((w, i) => (w.idempotency_key ? [requestFingerprint(items[i]!).then((fingerprint) => ({ id: w.id, key: w.idempotency_key!, fingerprint }))] : [])),
  );
  const deps = { store: d.idempotency, configId, ttlMs: d.config.ttl.idempotency_ttl, log: d.log, clock: d.clock };
  const owners = await claimKeyed(deps, keyed);
  return (
    owners && {
      owners,
      release: (ids: Set<string>) =>
        releaseKeyed(
          deps,
          keyed.filter((k) => ids.has(k.id)),
        ),
      commit: (ids: Set<string>) =>
        commitKeyed(
          deps,
          keyed.filter((k) => ids.has(k.id)),
        ),
    }
  );
};

export const createEdgeEnqueuer = (d: EdgeEnqueueDeps): Enqueuer => {
  const build = webhookBuilder(d.config, d.secretBox);

  const gate = async <T>(host: string, path: string, body: unknown): Promise<T> => {
    const stub = d.gates.get(d.gates.idFromName(host));
    let res: Response;
    try {
      res = await stub.fetch(`${GATE_ORIGIN}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    } catch (e) {
      throw new UnavailableError(`domain gate ${host} unreachable: ${errorMessage(e)}`, d.retryAfterSec);
    }
    const reply = (await res.json()) as T | GateError;
    if (reply && typeof reply === 'object' && 'error' in reply) {
      if (res.status === 503) throw new UnavailableError(reply.error.message, reply.error.retry_after ?? d.retryAfterSec);
      throw new HowkError(reply.error.code, reply.error.message);
    }
    return reply as T;
  };

  /**
   * Several hosts, one outcome: every gate reserves (dedupe + admission, no produce), the
   * Worker produces all the records in one call, then every gate settles.
   */
  const acrossHosts = async (configId: string, reqs: GateAdmitRequest[]): Promise<AdmitResult[][]> => {
    const reserved = await Promise.allSettled(reqs.map((r) => gate<ReserveReply>(r.host, '/reserve', r)));
    const settle = (ok: boolean) =>
      Promise.all(
        reserved.map((r, i) =>
          r.status === 'fulfilled'
            ? gate(reqs[i]!.host, '/settle', { reservation: r.value.reservation, ok }).catch((e) =>
                d.log.warn('gate settle failed (its reservation expires)', { host: reqs[i]!.host, error: errorMessage(e) }),
              )
            : undefined,
        ),
      );
    const failed = reserved.find((r) => r.status === 'rejected');
    if (failed) {
      await settle(false);
      throw failed.reason;
    }
    const replies = reserved.map((r) => (r as PromiseFulfilledResult<ReserveReply>).value);
    const { topics } = d.config.kafka;
    const records: KafkaRestRecord[] = [];
    replies.forEach((reply, i) =>
      reply.results.forEach((res, j) => {
        if (res.status === 'pending') records.push({ topic: (res.route ?? res.lane) === 'slow' ? topics.slow : topics.pending, key: configId, value: reqs[i]!.items[j]!.value });
      }),
    );
    try {
      if (records.length) await d.producer.produce(records);
    } catch (e) {
      await settle(false);
      throw e;
    }
    await settle(true);
    return replies.map((r) => r.results);
  };

  /** The gates' outcomes of the fresh hooks. */
  const admit = async (configId: string, hooks: Webhook[]): Promise<AdmitResult[]> => {
    const byHost = new Map<string, number[]>();
    hooks.forEach((w, i) => {
      const host = hostOf(w.endpoint);
      byHost.set(host, [...(byHost.get(host) ?? []), i]);
    });
    const groups = [...byHost];
    const reqs: GateAdmitRequest[] = groups.map(([host, idx]) => ({
      config_id: configId,
      host,
      items: idx.map((i) => ({
        webhook_id: hooks[i]!.id,
        endpoint_hash: hooks[i]!.endpoint_hash,
        ...(hooks[i]!.idempotency_key ? { idempotency_key: hooks[i]!.idempotency_key } : {}),
        value: encodeWebhook(hooks[i]!),
      })),
    }));
    const outcomes = reqs.length === 1 ? [(await gate<AdmitReply>(reqs[0]!.host, '/admit', reqs[0])).results] : await acrossHosts(configId, reqs);
    const out: AdmitResult[] = new Array(hooks.length);
    groups.forEach(([, idx], g) => outcomes[g]!.forEach((r, j) => (out[idx[j]!] = r)));
    return out;
  };

  return async (configId: string, items: EnqueueItem[]): Promise<EnqueueResult[]> => {
    const now = d.clock.now();
    const hooks = await Promise.all(items.map((it) => build(configId, it, now)));
    const claimed = await claimIn(d, configId, items, hooks);
    const fresh = claimed ? hooks.filter((w) => (claimed.owners.get(w.id) ?? w.id) === w.id) : hooks;
    let admitted: AdmitResult[] = [];
    try {
      if (fresh.length) admitted = await admit(configId, fresh);
    } catch (e) {
      await claimed?.release(new Set(fresh.map((w) => w.id)));
      throw e;
    }
    // The gates keep their host's keys too (the fallback when Redis fails): a key a gate still
    // holds from such a time answers its webhook, and the Redis claim made for nothing goes back.
    const other = new Set(fresh.filter((w, i) => admitted[i]!.webhook_id !== w.id).map((w) => w.id));
    if (claimed && other.size) await claimed.release(other);
    await claimed?.commit(new Set(fresh.filter((w) => !other.has(w.id)).map((w) => w.id)));
    const byId = new Map(fresh.map((w, i) => [w.id, admitted[i]!]));
    return hooks.map((w) => {
      const r = byId.get(w.id);
      return r ? { webhook_id: r.webhook_id, status: r.status, endpoint: w.endpoint } : { webhook_id: claimed!.owners.get(w.id)!, status: 'duplicate', endpoint: w.endpoint };
    });
  };
};
