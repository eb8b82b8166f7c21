import type { Config } from '../core/config/schema';
import { endpointHash, webhookId } from '../core/domain/ids';
import { iso } from '../core/domain/time';
import { encodeWebhook, type Webhook } from '../core/domain/webhook';
import { HowkError, UnavailableError, ValidationError, errorMessage } from '../core/errors/errors';
import type { EnqueueItem } from '../core/http/enqueue-request';
import type { EnqueueResult, Enqueuer } from '../core/pipeline/enqueue';
import type { Clock } from '../core/ports/clock';
import type { SecretBox } from '../core/signing/secret-box';
import { GATE_ORIGIN, type AdmitReply, type AdmitRequest, type GateError } from './gate/protocol';
import type { DurableObjectNamespace } from './runtime';

// The edge's enqueue: the same Webhook records as core/pipeline/enqueue.ts builds, handed to
// the DomainGate of each destination host, which dedupes, admits and produces them. The
// core enqueue routes call this exactly as they call howk-api's enqueuer.

export type EdgeEnqueueDeps = { config: Config; gates: DurableObjectNamespace; clock: Clock; secretBox?: SecretBox; retryAfterSec: number };

export const hostOf = (endpoint: string): string => new URL(endpoint).hostname.toLowerCase();

export const createEdgeEnqueuer = (d: EdgeEnqueueDeps): Enqueuer => {
  const build = async (configId: string, item: EnqueueItem, now: number): Promise<Webhook> => {
    let sealed: string | undefined;
    if (item.signing_secret !== undefined) {
      if (!d.secretBox) throw new ValidationError('signing_secret needs HOWK_SECRETS_KEY to be set on the server (secrets never travel in plaintext)', 'signing_secret');
      sealed = await d.secretBox.seal(item.signing_secret);
    }
    return {
      id: webhookId(now),
      config_id: configId,
      endpoint: item.endpoint,
      endpoint_hash: await endpointHash(item.endpoint),
      payload: item.payload,
      headers: item.headers,
      ...(item.idempotency_key ? { idempotency_key: item.idempotency_key } : {}),
      ...(sealed ? { signing_secret: sealed } : {}),
      attempt: 0,
      max_attempts: item.max_attempts ?? d.config.retry.max_attempts,
      deferrals: 0,
      created_at: iso(now),
      scheduled_at: iso(now),
    };
  };

  const admit = async (req: AdmitRequest): Promise<AdmitReply> => {
    const stub = d.gates.get(d.gates.idFromName(req.host));
    let res: Response;
    try {
      res = await stub.fetch(`${GATE_ORIGIN}/admit`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(req) });
    } catch (e) {
      throw new UnavailableError(`domain gate ${req.host} unreachable: ${errorMessage(e)}`, d.retryAfterSec);
    }
    const body = (await res.json()) as AdmitReply | GateError;
    if ('error' in body) {
      if (res.status === 503) throw new UnavailableError(body.error.message, body.error.retry_after ?? d.retryAfterSec);
      throw new HowkError(body.error.code, body.error.message);
    }
    return body;
  };

  return async (configId: string, items: EnqueueItem[]): Promise<EnqueueResult[]> => {
    const now = d.clock.now();
    const hooks = await Promise.all(items.map((it) => build(configId, it, now)));
    // One gate per destination host. A batch that spans hosts is admitted per host: see
    // docs/EDGE.md for what a failure of one part means.
    const byHost = new Map<string, number[]>();
    hooks.forEach((w, i) => {
      const host = hostOf(w.endpoint);
      byHost.set(host, [...(byHost.get(host) ?? []), i]);
    });
    const results: EnqueueResult[] = new Array(hooks.length);
    await Promise.all(
      [...byHost].map(async ([host, idx]) => {
        const reply = await admit({
          config_id: configId,
          host,
          items: idx.map((i) => ({ webhook_id: hooks[i]!.id, ...(hooks[i]!.idempotency_key ? { idempotency_key: hooks[i]!.idempotency_key } : {}), value: encodeWebhook(hooks[i]!) })),
        });
        reply.results.forEach((r, j) => {
          const i = idx[j]!;
          results[i] = { webhook_id: r.webhook_id, status: r.status, endpoint: hooks[i]!.endpoint };
        });
      }),
    );
    return results;
  };
};
