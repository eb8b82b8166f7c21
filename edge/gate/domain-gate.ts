import { HowkError, UnavailableError, ValidationError, errorMessage } from '../../core/errors/errors';
import type { Redis } from '@upstash/redis/cloudflare';
import { edgeConfigFrom, edgeKeysOf, edgeRedisOf, kafkaRestOptions, type EdgeConfig } from '../config';
import { transformerSecretNames } from '../incoming/registry';
import type { DurableObjectState } from '../runtime';
import type { KafkaRestRecord } from '../../core/ports/kafka-rest';
import { createRestProducer } from '../upstash/kafka';
import { chooseRoute } from './route';
import { MicroBatcher } from './batcher';
import { BucketStore } from './buckets';
import { CapacityView } from './capacity';
import { ClaimBook, type Claim, type PreparedAdmit } from './claims';
import { GateIdempotencyTable } from './idempotency';
import { Reservoir } from './latency';
import { parkedRecord, schedule, type Parked } from './park';
import type { AdmitReply, GateAdmitRequest, AdmitResult, GateError, GateStats, RateReply, RateRequest, ReserveReply, SettleRequest } from './protocol';

// DomainGate: one Durable Object per destination host (idFromName(host)), the strongly
// consistent front of that host's traffic. It dedupes idempotency keys, admits to the fast
// lane at the rate the host's measured capacity sustains (the rest to the slow lane, an open
// circuit's webhooks parked in the retry schedule: ./admission.ts), and batches the records
// of concurrent requests into one REST produce, on an in-memory timer. A request hears back
// only once Kafka acknowledged its records. What must outlive an eviction (idempotency rows,
// reservations, bucket levels) is in its SQLite storage; its alarm only expires rows.
// The same class also serves API keys' shared request rate (`/ratelimit`, one object per key).

const json = (body: unknown, status = 200) => new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });

/** How long a reservation may wait for its settle before its keys are given back. */
const RESERVATION_TTL_MS = 10_000;

export class DomainGate {
  private readonly cfg: EdgeConfig;
  private readonly idem: GateIdempotencyTable;
  private readonly claims: ClaimBook;
  private readonly batcher: MicroBatcher;
  private readonly reservations = new Map<string, { claims: Claim[]; timer: ReturnType<typeof setTimeout> }>();
  private readonly buckets: BucketStore;
  private readonly redis: Redis | undefined;
  private capacity: CapacityView | undefined;
  private flushTimer: ReturnType<typeof setTimeout> | undefined;
  private alarmAt: number | null = null;
  private readonly counters = { flushes: 0, flushed_records: 0, produce_failures: 0, pending: 0, slow: 0, parked: 0, duplicates: 0 };
  /** Per admitted request: time in the gate minus the produce that carried it. */
  private readonly added = new Reservoir();
  private readonly produceMs = new Reservoir();

  constructor(
    private readonly state: DurableObjectState,
    env: Record<string, unknown>,
  ) {
    this.cfg = edgeConfigFrom(env, transformerSecretNames());
    const e = this.cfg.edge;
    this.idem = new GateIdempotencyTable(state.storage.sql);
    this.claims = new ClaimBook(this.idem, () => this.cfg.config.ttl.idempotency_ttl);
    this.buckets = new BucketStore(state.storage.sql);
    this.redis = edgeRedisOf(e);
    const producer = createRestProducer(kafkaRestOptions(e));
    this.batcher = new MicroBatcher({
      maxRecords: e.batch_max_records,
      maxInFlight: e.batch_max_in_flight,
      produce: (records) => producer.produce(records),
      // A timer in memory, not an alarm: an alarm costs a storage write and an invocation.
      arm: () => {
        this.flushTimer ??= setTimeout(() => {
          this.flushTimer = undefined;
          this.batcher.flush();
        }, e.batch_linger);
      },
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
      if (req.method === 'POST' && path === '/admit') return json({ results: await this.admit((await req.json()) as GateAdmitRequest) } satisfies AdmitReply);
      if (req.method === 'POST' && path === '/reserve') return json(await this.reserve((await req.json()) as GateAdmitRequest));
      if (req.method === 'POST' && path === '/settle') return json(this.settle((await req.json()) as SettleRequest));
      if (req.method === 'POST' && path === '/ratelimit') return json(this.rateLimit((await req.json()) as RateRequest));
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

  /** Deletes expired idempotency keys and reservations, and waits for the next. */
  async alarm(): Promise<void> {
    this.alarmAt = null;
    const next = this.idem.purge(Date.now());
    if (next !== null) this.scheduleAlarm(next);
  }

  /** The expiry alarm is only ever moved earlier. */
  private scheduleAlarm(at: number): void {
    if (this.alarmAt !== null && this.alarmAt <= at) return;
    this.alarmAt = at;
    void this.state.storage.setAlarm(at);
  }

  private capacityOf(host: string): CapacityView {
    return (this.capacity ??= new CapacityView(this.redis, host, this.cfg.edge.capacity_cache, edgeKeysOf(this.cfg.config)));
  }

  private async prepare(req: GateAdmitRequest, wait: boolean): Promise<PreparedAdmit> {
    if (!req || typeof req.config_id !== 'string' || typeof req.host !== 'string' || !Array.isArray(req.items)) throw new ValidationError('malformed admit request');
    const hashes = [...new Set(req.items.map((it) => it.endpoint_hash).filter((h): h is string => typeof h === 'string'))];
    const cap = await this.capacityOf(req.host).of(hashes, Date.now());
    const now = Date.now();
    const { edge, config } = this.cfg;
    const route = (i: number) =>
      chooseRoute({ cap, host: req.host, endpointHash: req.items[i]!.endpoint_hash, now, edge, circuit: config.circuit_breaker, buckets: this.buckets, canPark: wait });
    const p = this.claims.prepare(req, now, route, wait);
    this.counters.duplicates += p.duplicates;
    return p;
  }

  private accepted(req: GateAdmitRequest, p: PreparedAdmit): Promise<AdmitResult[]> {
    for (const f of p.fresh) {
      this.counters[f.route]++;
      p.results[f.index] = { webhook_id: req.items[f.index]!.webhook_id, status: 'pending', route: f.route, ...(f.until ? { until: f.until } : {}) };
    }
    return Promise.all(p.results);
  }

  private commit(claims: Claim[]): void {
    const expiresAt = this.claims.commit(claims);
    if (expiresAt !== null) this.scheduleAlarm(expiresAt);
  }

  private commitRows(rows: { k: string; webhookId: string }[]): void {
    const expiresAt = Date.now() + this.cfg.config.ttl.idempotency_ttl;
    this.idem.put(rows.map((r) => ({ ...r, expiresAt })));
    this.scheduleAlarm(expiresAt);
  }

  /** One request of an API key, against its bucket (this object is the key's: idFromName('key:<id>')). */
  private rateLimit(r: RateRequest): RateReply {
    if (!r || typeof r.rate !== 'number' || typeof r.burst !== 'number') throw new ValidationError('malformed rate request');
    const t = this.buckets.take('key', r.rate, r.burst, Date.now());
    return t.ok ? { ok: true } : { ok: false, retry_after: Math.max(1, Math.ceil(t.waitMs / 1000)) };
  }

  private async admit(req: GateAdmitRequest): Promise<AdmitResult[]> {
    const t0 = Date.now();
    const p = await this.prepare(req, true);
    const { topics } = this.cfg.config.kafka;
    try {
      if (p.fresh.length) {
        const parked: Parked[] = p.fresh.filter((f) => f.route === 'parked').map((f) => ({ value: req.items[f.index]!.value, until: f.until! }));
        const records: KafkaRestRecord[] = p.fresh.map((f) =>
          f.route === 'parked'
            ? parkedRecord(topics.state, { value: req.items[f.index]!.value, until: f.until! }, t0)
            : { topic: f.route === 'pending' ? topics.pending : topics.slow, key: req.config_id, value: req.items[f.index]!.value },
        );
        const { produceMs } = await this.batcher.add(records);
        if (parked.length) await this.schedule(req, parked);
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

  /**
   * Parked webhooks join the retry schedule. Should Redis refuse, they go to the slow lane
   * instead, where the worker parks them on arrival: accepted either way, never lost.
   */
  private async schedule(req: GateAdmitRequest, parked: Parked[]): Promise<void> {
    try {
      if (!this.redis) throw new Error('no Redis REST endpoint');
      await schedule(this.redis, parked, this.cfg.config.ttl.retry_data_ttl, edgeKeysOf(this.cfg.config));
    } catch {
      const slow = this.cfg.config.kafka.topics.slow;
      await this.batcher.add(parked.map((x) => ({ topic: slow, key: req.config_id, value: x.value })));
    }
  }

  private async reserve(req: GateAdmitRequest): Promise<ReserveReply> {
    const p = await this.prepare(req, false);
    const reservation = crypto.randomUUID();
    const timer = setTimeout(() => this.settle({ reservation, ok: false }), RESERVATION_TTL_MS);
    this.reservations.set(reservation, { claims: p.claims, timer });
    if (p.claims.length) {
      const expiresAt = Date.now() + RESERVATION_TTL_MS;
      this.idem.reserve(
        reservation,
        p.claims.map((c) => ({ k: c.k, webhookId: c.webhookId })),
        expiresAt,
      );
      this.scheduleAlarm(expiresAt);
    }
    return { reservation, results: await this.accepted(req, p) };
  }

  private settle(s: SettleRequest): { settled: boolean } {
    const r = this.reservations.get(s.reservation);
    const held = this.idem.release(s.reservation, Date.now());
    if (!r) {
      // Reserved before this gate was evicted: the keys wait in storage for this settle.
      if (s.ok && held.length) this.commitRows(held);
      return { settled: held.length > 0 };
    }
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
      admitted: { pending: c.pending, slow: c.slow, parked: c.parked },
      duplicates: c.duplicates,
      buffered: this.batcher.buffered,
      reservations: this.reservations.size,
      alarm_at: this.alarmAt,
      capacity_reads: this.capacity?.reads ?? 0,
      capacity_failures: this.capacity?.failures ?? 0,
      buckets: this.buckets.levels(),
      added_ms: this.added.percentiles(),
      produce_ms: this.produceMs.percentiles(),
    };
  }
}
