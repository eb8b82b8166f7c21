import { UnavailableError } from '../../core/errors/errors';
import type { GateIdempotencyTable } from './idempotency';
import type { GateAdmitRequest, AdmitResult, RouteChoice } from './protocol';

// Idempotency claims of one gate. A key is first claimed in memory (the gate is the only
// writer of its host's keys, so memory is enough while a produce is in flight), and becomes
// a durable row only once Kafka acknowledged its webhook. Requests that meet an in-flight
// key wait for its outcome: the owner's id if it was produced, its error if not.

export type Claim = { k: string; webhookId: string; resolve: (id: string) => void; reject: (e: unknown) => void };

export type PreparedAdmit = {
  results: (AdmitResult | Promise<AdmitResult>)[];
  claims: Claim[];
  /** Items to produce, with the route each was given. */
  fresh: ({ index: number } & RouteChoice)[];
  duplicates: number;
};

export class ClaimBook {
  private readonly inflight = new Map<string, Promise<string>>();

  constructor(
    private readonly store: GateIdempotencyTable,
    private readonly ttlMs: () => number,
  ) {}

  /**
   * Sorts a request's items into duplicates and fresh ones (claiming their keys).
   * `wait: false` (reservations of multi-host requests) refuses to wait on an in-flight key,
   * so that two such requests can never wait on each other across gates.
   */
  prepare(req: GateAdmitRequest, now: number, route: (index: number) => RouteChoice, wait: boolean): PreparedAdmit {
    const out: PreparedAdmit = { results: [], claims: [], fresh: [], duplicates: 0 };
    const mine = new Map<string, Claim>();
    req.items.forEach((it, index) => {
      if (it.idempotency_key !== undefined) {
        const k = `${req.config_id}\n${it.idempotency_key}`;
        // The first item with a key wins, within a request and across requests.
        const owner = mine.get(k)?.webhookId ?? this.store.owner(k, now);
        const inflight = owner === null ? this.inflight.get(k) : undefined;
        if (owner !== null) {
          out.duplicates++;
          out.results[index] = { webhook_id: owner, status: 'duplicate' };
          return;
        }
        // Reserved by a multi-host request before this gate restarted: its settle decides.
        if (!inflight && this.store.reserved(k, now)) {
          this.abort(out.claims, undefined);
          throw new UnavailableError(`a request with idempotency key ${it.idempotency_key} is in flight`, 1);
        }
        if (inflight) {
          if (!wait) {
            this.abort(out.claims, undefined);
            throw new UnavailableError(`a request with idempotency key ${it.idempotency_key} is in flight`, 1);
          }
          out.duplicates++;
          out.results[index] = inflight.then((id) => ({ webhook_id: id, status: 'duplicate' }));
          return;
        }
        let claim!: Claim;
        const p = new Promise<string>((resolve, reject) => (claim = { k, webhookId: it.webhook_id, resolve, reject }));
        p.catch(() => {});
        this.inflight.set(k, p);
        mine.set(k, claim);
        out.claims.push(claim);
      }
      out.fresh.push({ index, ...route(index) });
    });
    return out;
  }

  /** Kafka has the webhooks: the keys become durable owners. Returns their expiry, if any. */
  commit(claims: Claim[]): number | null {
    if (!claims.length) return null;
    const expiresAt = Date.now() + this.ttlMs();
    this.store.put(claims.map((c) => ({ k: c.k, webhookId: c.webhookId, expiresAt })));
    for (const c of claims) {
      this.inflight.delete(c.k);
      c.resolve(c.webhookId);
    }
    return expiresAt;
  }

  /** Nothing was accepted: the keys are free again, and whoever waited on them fails the same way. */
  abort(claims: Claim[], error: unknown): void {
    for (const c of claims) {
      this.inflight.delete(c.k);
      c.reject(error ?? new UnavailableError('the request holding this idempotency key failed', 1));
    }
  }
}
