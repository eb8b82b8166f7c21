import { HowkError, UnavailableError, ValidationError, errorMessage } from '../../core/errors/errors';
import { takeToken, type Bucket } from '../../core/policy/token-bucket';
import { admissionOf, edgeConfigFrom, type EdgeConfig } from '../config';
import { transformerSecretNames } from '../incoming/registry';
import type { DurableObjectState } from '../runtime';
import { createRestProducer, type RestRecord } from '../upstash/kafka';
import { MicroBatcher } from './batcher';
import { ClaimBook, type Claim, type Prepared } from './claims';
import { IdempotencyStore } from './idempotency';
import { Reservoir } from './latency';
import type { AdmitReply, AdmitRequest, AdmitResult, GateError, GateStats, Lane, ReserveReply, SettleRequest } from './protocol';

// DomainGate: one Durable Object per destination host (idFromName(host)), the strongly
// consistent front of that host's traffic. It dedupes idempotency keys (SQLite, expired by
// alarm), admits through a token bucket (the overflow goes to the slow lane), and batches
// the records of concurrent requests into one REST produce. A request hears back only once
// Kafka acknowledged its records.

const json = (body: unknown, status = 200) => new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });

/** How long a reservation may wait for its settle before its keys are given back. */
const RESERVATION_TTL_MS = 10_000;

export class DomainGate {
  private readonly cfg: EdgeConfig;
  private readonly idem: IdempotencyStore;
  private readonly claims: ClaimBook;
  private readonly batcher: MicroBatcher;
  private readonly reservations = new Map<string, { claims: Claim[]; timer: ReturnType<typeof setTimeout> }>();
  private bucket: Bucket | undefined;
  private alarmAt: number | null = null;
  private readonly counters = { flushes: 0, flushed_records: 0, produce_failures: 0, pending: 0, slow: 0, duplicates: 0 };
  /** Per admitted request: time in the gate minus the produce that carried it. */
  private readonly added = new Reservoir();
  private readonly produceMs = new Reservoir();

  constructor(
    private readonly state: DurableObjectState,
    env: Record<string, unknown>,
  ) {
    this.cfg = edgeConfigFrom(env, transformerSecretNames());
    const e = this.cfg.edge;
    this.idem = new IdempotencyStore(state.storage.sql);
    this.claims = new ClaimBook(this.idem, () => this.cfg.config.ttl.idempotency_ttl);
    const producer = createRestProducer({
      url: e.kafka_rest_url,
      username: e.kafka_rest_username,
      password: e.kafka_rest_password!,
      deadlineMs: e.produce_deadline,
      retryAfterSec: e.retry_after,
    });
    this.batcher = new MicroBatcher({
      maxRecords: e.batch_max_records,
      produce: (records) => producer.produce(records),
      arm: () => this.scheduleAlarm(Date.now() + e.batch_linger),
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
      if (req.method === 'POST' && path === '/reserve') return json(await this.reserve((await req.json()) as AdmitRequest));
      if (req.method === 'POST' && path === '/settle') return json(this.settle((await req.json()) as SettleRequest));
      if (req.method === 'GET' && path === '/stats') return json(this.stats());
      if (req.method === 'POST' && path === '/stats/reset') {
        this.added.reset();
        this.produceMs.reset();
        return json(this.stats());
      }
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

  /** One alarm serves both jobs (flush, expiry): it is only ever moved earlier. */
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

  private prepare(req: AdmitRequest, wait: boolean): Prepared {
    if (!req || typeof req.config_id !== 'string' || typeof req.host !== 'string' || !Array.isArray(req.items)) throw new ValidationError('malformed admit request');
    const now = Date.now();
    const p = this.claims.prepare(req, now, () => this.lane(now, req.host), wait);
    this.counters.duplicates += p.duplicates;
    return p;
  }

  private accepted(req: AdmitRequest, p: Prepared): Promise<AdmitResult[]> {
    for (const f of p.fresh) {
      this.counters[f.lane]++;
      p.results[f.index] = { webhook_id: req.items[f.index]!.webhook_id, status: 'pending', lane: f.lane };
    }
    return Promise.all(p.results);
  }

  private commit(claims: Claim[]): void {
    const expiresAt = this.claims.commit(claims);
    if (expiresAt !== null) this.scheduleAlarm(expiresAt);
  }

  private async admit(req: AdmitRequest): Promise<AdmitResult[]> {
    const t0 = Date.now();
    const p = this.prepare(req, true);
    const { topics } = this.cfg.config.kafka;
    try {
      if (p.fresh.length) {
        const records: RestRecord[] = p.fresh.map((f) => ({ topic: f.lane === 'pending' ? topics.pending : topics.slow, key: req.config_id, value: req.items[f.index]!.value }));
        const { produceMs } = await this.batcher.add(records);
        this.added.add(Date.now() - t0 - produceMs);
        this.produceMs.add(produceMs);
      }
    } catch (e) {
      // Nothing of this request was accepted; requests waiting on its keys fail the same way.
      this.claims.abort(p.claims, e);
      throw e;
    }
    this.commit(p.claims);
    return this.accepted(req, p);
  }

  private async reserve(req: AdmitRequest): Promise<ReserveReply> {
    const p = this.prepare(req, false);
    const reservation = crypto.randomUUID();
    const timer = setTimeout(() => this.settle({ reservation, ok: false }), RESERVATION_TTL_MS);
    this.reservations.set(reservation, { claims: p.claims, timer });
    return { reservation, results: await this.accepted(req, p) };
  }

  private settle(s: SettleRequest): { settled: boolean } {
    const r = this.reservations.get(s.reservation);
    if (!r) return { settled: false };
    this.reservations.delete(s.reservation);
    clearTimeout(r.timer);
    if (s.ok) this.commit(r.claims);
    else this.claims.abort(r.claims, undefined);
    return { settled: true };
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
      reservations: this.reservations.size,
      alarm_at: this.alarmAt,
      added_ms: this.added.percentiles(),
      produce_ms: this.produceMs.percentiles(),
    };
  }
}
