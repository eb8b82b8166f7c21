import { HowkError, UnavailableError, ValidationError, errorMessage } from '../../core/errors/errors';
import { takeToken, type Bucket } from '../../core/policy/token-bucket';
import { admissionOf, edgeConfigFrom, type EdgeConfig } from '../config';
import type { DurableObjectState } from '../runtime';
import { createRestProducer, type RestRecord } from '../upstash/kafka';
import { MicroBatcher } from './batcher';
import { IdempotencyStore } from './idempotency';
import type { AdmitReply, AdmitRequest, AdmitResult, GateError, GateStats, Lane } from './protocol';

// DomainGate: one Durable Object per destination host (idFromName(host)), the strongly
// consistent front of that host's traffic. It dedupes idempotency keys (SQLite, expired by
// alarm), admits through a token bucket (the overflow goes to the slow lane), and batches
// the records of concurrent requests into one REST produce. A request hears back only once
// Kafka acknowledged its records.

const json = (body: unknown, status = 200) => new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });

type Claim = { k: string; webhookId: string; resolve: (id: string) => void; reject: (e: unknown) => void };

export class DomainGate {
  private readonly cfg: EdgeConfig;
  private readonly idem: IdempotencyStore;
  private readonly batcher: MicroBatcher;
  /** Keys whose first webhook is being produced: later requests wait for its outcome. */
  private readonly inflight = new Map<string, Promise<string>>();
  private bucket: Bucket | undefined;
  private alarmAt: number | null = null;
  private readonly counters = { flushes: 0, flushed_records: 0, produce_failures: 0, pending: 0, slow: 0, duplicates: 0 };

  constructor(private readonly state: DurableObjectState, env: Record<string, unknown>) {
    this.cfg = edgeConfigFrom(env);
    const e = this.cfg.edge;
    this.idem = new IdempotencyStore(state.storage.sql);
    const producer = createRestProducer({ url: e.kafka_rest_url, username: e.kafka_rest_username, password: e.kafka_rest_password!, deadlineMs: e.produce_deadline, retryAfterSec: e.retry_after });
    this.batcher = new MicroBatcher({
      maxRecords: e.batch_max_records,
      produce: (records) => producer.produce(records),
      arm: () => this.alarmIn(e.batch_linger),
      onFlush: (n, ok) => {
        this.counters.flushes++;
        if (ok) this.counters.flushed_records += n;
        else this.counters.produce_failures++;
      },
    });
    void state.blockConcurrencyWhile(async () => {
      this.alarmAt = await state.storage.getAlarm();
    });
  }

  async fetch(req: Request): Promise<Response> {
    const path = new URL(req.url).pathname;
    try {
      if (req.method === 'POST' && path === '/admit') return json({ results: await this.admit((await req.json()) as AdmitRequest) } satisfies AdmitReply);
      if (req.method === 'GET' && path === '/stats') return json(this.stats());
      return json({ error: { code: 'not_found', message: `no gate route ${req.method} ${path}` } } satisfies GateError, 404);
    } catch (e) {
      if (e instanceof UnavailableError) return json({ error: { code: e.code, message: e.message, retry_after: e.retryAfterSec } } satisfies GateError, 503);
      if (e instanceof HowkError) return json({ error: { code: e.code, message: e.message } } satisfies GateError, 400);
      return json({ error: { code: 'internal', message: errorMessage(e) } } satisfies GateError, 500);
    }
  }

  /** Flushes a lingering batch, then deletes expired idempotency keys and waits for the next. */
  async alarm(): Promise<void> {
    this.alarmAt = null;
    if (this.batcher.buffered) this.batcher.flush();
    const next = this.idem.purge(Date.now());
    if (next !== null) this.scheduleAlarm(next);
  }

  private alarmIn(ms: number): void {
    this.scheduleAlarm(Date.now() + ms);
  }

  /** One alarm serves both jobs: it is only ever moved earlier. */
  private scheduleAlarm(at: number): void {
    if (this.alarmAt !== null && this.alarmAt <= at) return;
    this.alarmAt = at;
    void this.state.storage.setAlarm(at);
  }

  private lane(now: number, host: string): Lane {
    const { rate, burst } = admissionOf(this.cfg.edge, host);
    if (rate <= 0) return 'pending';
    this.bucket ??= { tokens: burst, at: now };
    return takeToken(this.bucket, now, rate, burst).ok ? 'pending' : 'slow';
  }

  private async admit(req: AdmitRequest): Promise<AdmitResult[]> {
    if (!req || typeof req.config_id !== 'string' || typeof req.host !== 'string' || !Array.isArray(req.items)) throw new ValidationError('malformed admit request');
    const now = Date.now();
    const { topics } = this.cfg.config.kafka;
    const results: (AdmitResult | Promise<AdmitResult>)[] = [];
    const claims = new Map<string, Claim>();
    const fresh: { index: number; lane: Lane }[] = [];
    req.items.forEach((it, index) => {
      if (it.idempotency_key !== undefined) {
        const k = `${req.config_id}\n${it.idempotency_key}`;
        // The first item with a key wins, within a request and across requests.
        const owner = claims.get(k)?.webhookId ?? this.idem.owner(k, now);
        const waiting = owner === null ? this.inflight.get(k) : undefined;
        if (owner !== null || waiting) {
          this.counters.duplicates++;
          results[index] = owner !== null ? { webhook_id: owner, status: 'duplicate' } : waiting!.then((id) => ({ webhook_id: id, status: 'duplicate' }));
          return;
        }
        let claim!: Claim;
        const p = new Promise<string>((resolve, reject) => (claim = { k, webhookId: it.webhook_id, resolve, reject }));
        p.catch(() => {});
        this.inflight.set(k, p);
        claims.set(k, claim);
      }
      fresh.push({ index, lane: this.lane(now, req.host) });
    });

    try {
      if (fresh.length) {
        const records: RestRecord[] = fresh.map((f) => ({ topic: f.lane === 'pending' ? topics.pending : topics.slow, key: req.config_id, value: req.items[f.index]!.value }));
        await this.batcher.add(records);
      }
      // Kafka has them: only now do the keys become durable owners.
      const expiresAt = Date.now() + this.cfg.config.ttl.idempotency_ttl;
      this.idem.put([...claims.values()].map((c) => ({ k: c.k, webhookId: c.webhookId, expiresAt })));
      if (claims.size) this.scheduleAlarm(expiresAt);
      for (const c of claims.values()) c.resolve(c.webhookId);
    } catch (e) {
      // Nothing of this request was accepted; requests waiting on its keys fail the same way.
      for (const c of claims.values()) c.reject(e);
      throw e;
    } finally {
      for (const c of claims.values()) this.inflight.delete(c.k);
    }
    for (const f of fresh) {
      this.counters[f.lane]++;
      results[f.index] = { webhook_id: req.items[f.index]!.webhook_id, status: 'pending', lane: f.lane };
    }
    return Promise.all(results);
  }

  private stats(): GateStats {
    const c = this.counters;
    return {
      idempotency_keys: this.idem.count(),
      flushes: c.flushes,
      flushed_records: c.flushed_records,
      produce_failures: c.produce_failures,
      admitted: { pending: c.pending, slow: c.slow },
      duplicates: c.duplicates,
      buffered: this.batcher.buffered,
      alarm_at: this.alarmAt,
    };
  }
}
