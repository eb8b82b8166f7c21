import type { Redis } from 'ioredis';
import { keys } from '../../core/domain/keys';
import { freshLimit, LATENCY_SAMPLES, QUEUED_WINDOW_MS, type LimitState } from '../../core/policy/adaptive-limit';
import type { CircuitState } from '../../core/policy/circuit';
import type {
  Admission,
  AdmitRequest,
  CircuitRestore,
  CircuitTransition,
  Completion,
  EndpointView,
  GuardGauges,
  GuardParams,
  Guards,
  HeldRestore,
  HoldResult,
  InflightLease,
  PauseScope,
  ResumeResult,
  TakeHeldResult,
} from '../../core/ports/guards';
import { concurrencyView } from '../../core/policy/concurrency-view';
import { call, execPipeline, toHowkError } from './exec';
import { readGuardGauges } from './guard-gauges';
import { RespArgs } from './resp';
import { batchScript, callScript, type BatchScript } from './script-call';
import { BATCH_SCRIPTS, scriptedPipeline, withScripts, type ScriptedClient } from './scripts';

// Guards on Redis: every admission (completion) a worker asks for at once goes in one
// admitDelivery (completeDelivery) script call: one round trip and one script run.

const limitArgs = (w: RespArgs, p: GuardParams) =>
  w.num(p.limits.initial).num(p.limits.floor).num(p.limits.tolerance).num(p.limits.slowThresholdMs).num(p.limits.windowMs).num(p.limits.ceiling);

const ADMIT = batchScript(BATCH_SCRIPTS.admitDelivery);
const COMPLETE = batchScript(BATCH_SCRIPTS.completeDelivery);

// The key prefixes the scripts build their keys from, in their headers' order.
const ADMIT_PREFIXES = [
  keys.pause('endpoint', ''),
  keys.pause('config', ''),
  keys.circuit(''),
  keys.rateBucket(''),
  keys.domainInflight(''),
  keys.inflight(''),
  keys.endpointLimit(''),
  keys.domainLimit(''),
  keys.endpointQueued(''),
];
const COMPLETE_PREFIXES = [
  keys.circuit(''),
  keys.inflight(''),
  keys.domainInflight(''),
  keys.endpointErrors(''),
  keys.endpointLimit(''),
  keys.domainLimit(''),
  keys.endpointLatency(''),
];
const OUTCOME_FLAG: Record<Completion['outcome'], number> = { success: 0, failure: 32, neutral: 64 };
/** completeDelivery.lua's code of a completion that moved the circuit. */
const T_CODE = 'T'.charCodeAt(0);

/**
 * The distinct endpoints and hosts of one call, each sent once (numbered from 1): endpoint
 * entries name their host by number, and a host carries its domain limit ceiling.
 */
class Places {
  /** Per endpoint entry (numbered from 1 in this order): its hash, its host's number. */
  private readonly entries: (string | number)[] = [];
  /** An endpoint's entry by its hash (with the first host it came with). */
  private readonly byHash = new Map<string, number>();
  /** A hash that came with another host too (not expected: the host is part of the endpoint) has an entry per host. */
  private readonly byHost = new Map<string, number>();
  private readonly hosts = new Map<string, number>();
  constructor(private readonly p: GuardParams) {}

  endpoint(hash: string, host: string): number {
    let h = this.hosts.get(host);
    if (h === undefined) this.hosts.set(host, (h = this.hosts.size + 1));
    const e = this.byHash.get(hash);
    if (e !== undefined && this.entries[2 * e - 1] === h) return e;
    if (e === undefined) {
      this.byHash.set(hash, this.entries.push(hash, h) / 2);
      return this.entries.length / 2;
    }
    const key = `${h}:${hash}`;
    let other = this.byHost.get(key);
    if (other === undefined) this.byHost.set(key, (other = this.entries.push(hash, h) / 2));
    return other;
  }

  args(w: RespArgs): void {
    w.num(this.entries.length / 2);
    for (let i = 0; i < this.entries.length; i += 2) w.str(this.entries[i] as string).num(this.entries[i + 1] as number);
    w.num(this.hosts.size);
    for (const host of this.hosts.keys()) w.str(host).num(this.p.maxInflightPerDomain(host));
  }
}

/**
 * The arguments every call begins with (the params and the key prefixes), encoded once per
 * GuardParams: a worker builds its params once from its config and never changes them.
 */
const shared = new WeakMap<GuardParams, { admit: RespArgs; complete: RespArgs }>();
const sharedArgs = (p: GuardParams) => {
  let s = shared.get(p);
  if (!s) shared.set(p, (s = { admit: admitShared(p), complete: completeShared(p) }));
  return s;
};

const admitShared = (p: GuardParams) => {
  const w = new RespArgs()
    .num(p.circuit.enabled ? 1 : 0)
    .num(p.circuit.probe_interval)
    .num(p.circuitTtlMs)
    .num(p.rate)
    .num(p.burst)
    .num(p.maxInflightPerEndpoint)
    .num(p.inflightLeaseMs);
  limitArgs(w, p).str(p.requireCanary ? keys.canary() : '');
  for (const prefix of ADMIT_PREFIXES) w.str(prefix);
  return w;
};

const completeShared = (p: GuardParams) => {
  const c = p.circuit;
  const w = new RespArgs()
    .num(c.enabled ? 1 : 0)
    .num(c.failure_threshold)
    .num(c.failure_window)
    .num(c.recovery_timeout)
    .num(c.probe_interval)
    .num(c.success_threshold)
    .num(p.circuitTtlMs);
  limitArgs(w, p).num(LATENCY_SAMPLES);
  for (const prefix of COMPLETE_PREFIXES) w.str(prefix);
  return w;
};

/** A reply item as ioredis's parser gives it: a bulk string as a Buffer, an integer as a number. */
type Raw = Buffer | number;
const text = (x: Raw | undefined): string => String(x);
const num = (x: Raw | undefined): number => (typeof x === 'number' ? x : Number(x?.toString('latin1')));
const [G, P, D, R] = ['g', 'p', 'd', 'r'].map((c) => c.charCodeAt(0));

/**
 * admitDelivery.lua's flat reply, one answer per request: each answer's kind (told apart by
 * its first letter and, for 'park'/'paused' and 'recovered'/'rebuilding', its length) gives
 * how many fields follow.
 */
const toAdmissions = (flat: Raw[]): Admission[] => {
  const out: Admission[] = [];
  for (let i = 0; i < flat.length;) {
    const kind = flat[i];
    const first = typeof kind === 'number' ? -1 : kind![0];
    if (first === G) {
      const seen = flat[i + 4] ? { fastLimit: num(flat[i + 4]), limit: num(flat[i + 5]), latencyMs: num(flat[i + 6]) } : undefined;
      out.push({ kind: 'go', probe: flat[i + 1] === 1, counted: { endpoint: flat[i + 2] === 1, domain: flat[i + 3] === 1 }, ...(seen && { seen }) });
      i += 7;
    } else if (first === P && (kind as Buffer).length === 4) {
      out.push({ kind: 'park', reason: text(flat[i + 1]) as 'circuit_open' | 'rate_limited', until: num(flat[i + 2]) });
      i += 3;
    } else if (first === P) {
      out.push({ kind: 'paused', scope: text(flat[i + 1]) as 'endpoint' | 'config' });
      i += 2;
    } else if (first === D) {
      out.push({ kind: 'divert', reason: text(flat[i + 1]) as 'endpoint_inflight' | 'domain_inflight' });
      i += 2;
    } else {
      // 'rebuilding': no canary, Redis is being rebuilt (its pauses and circuits are not back
      // yet): ask again, as after a 'wait'.
      out.push(first === R && (kind as Buffer).length === 9 ? { kind: 'recovered' } : { kind: 'wait' });
      i += 1;
    }
  }
  return out;
};

export class RedisGuards implements Guards {
  private readonly redis: ScriptedClient;
  constructor(redis: Redis) {
    this.redis = withScripts(redis);
  }

  async admit(reqs: AdmitRequest[], p: GuardParams): Promise<Admission[]> {
    if (!reqs.length) return [];
    const w = new RespArgs().append(sharedArgs(p).admit);
    const at = new Places(p);
    const configs = new Map<string, number>();
    const per = new RespArgs();
    let now: number | undefined;
    for (const r of reqs) {
      let config = configs.get(r.configId);
      if (config === undefined) configs.set(r.configId, (config = configs.size + 1));
      const pass = r.passPause ?? [];
      const flags = (r.waited ? 1 : 0) + (r.lane === 'slow' ? 2 : 0) + (pass.includes('endpoint') ? 4 : 0) + (pass.includes('config') ? 8 : 0);
      per.num(at.endpoint(r.endpointHash, r.host)).num(config);
      if (r.now === now) per.str('');
      else per.num(r.now);
      per.str(r.id).num(flags);
      now = r.now;
    }
    at.args(w);
    w.num(configs.size);
    for (const id of configs.keys()) w.str(id);
    w.append(per);
    return toAdmissions((await this.run(ADMIT, w)) as Raw[]);
  }

  async complete(done: Completion[], p: GuardParams): Promise<CircuitTransition[]> {
    if (!done.length) return [];
    const w = new RespArgs().append(sharedArgs(p).complete);
    const at = new Places(p);
    const per = new RespArgs();
    let now: number | undefined;
    for (const d of done) {
      const x = d.sample;
      const error = (d.error ?? '').slice(0, 200);
      const flags = (d.probe ? 1 : 0) + (d.counted.endpoint ? 2 : 0) + (d.counted.domain ? 4 : 0) + (x?.drop ? 8 : 0) + (x?.timeout ? 16 : 0) + OUTCOME_FLAG[d.outcome];
      per.num(at.endpoint(d.endpointHash, d.host));
      if (d.now === now) per.str('');
      else per.num(d.now);
      // The time as text only goes with an error (the script reads it for nothing else).
      per
        .num(flags)
        .str(error)
        .str(error ? new Date(d.now).toISOString() : '');
      if (x) per.num(x.ms);
      else per.str('');
      per.str(d.id);
      now = d.now;
    }
    at.args(w);
    w.append(per);
    const reply = (await this.run(COMPLETE, w)) as [Buffer, ...Raw[]];
    // One code per completion; a 'T' (this completion opened or closed the circuit) has its
    // triple next in the reply.
    const moved: CircuitTransition[] = [];
    const codes = reply[0];
    for (let i = 0, t = 1; i < codes.length; i++) {
      if (codes[i] !== T_CODE) continue;
      const state = text(reply[t]);
      moved.push({
        endpointHash: done[i]!.endpointHash,
        state: state === 'CLOSED' ? 'CLOSED' : 'OPEN',
        at: done[i]!.now,
        openUntil: num(reply[t + 1]),
        openedCount: num(reply[t + 2]),
      });
      t += 3;
    }
    return moved;
  }

  /** One script call, its failures as the rest of Howk sees them (workers/redis/exec.ts). */
  private async run(script: BatchScript, w: RespArgs): Promise<unknown> {
    try {
      return await callScript(this.redis, script, w);
    } catch (err) {
      throw toHowkError(err);
    }
  }

  async renew(leases: InflightLease[], now: number, p: GuardParams): Promise<void> {
    if (!leases.length) return;
    // XX: a lease that ended meanwhile (its completion got there first) is not brought back.
    const pipe = this.redis.pipeline();
    const touched = new Set<string>();
    const renewOne = (key: string, id: string) => {
      pipe.zadd(key, 'XX', now + p.inflightLeaseMs, id);
      touched.add(key);
    };
    for (const l of leases) {
      if (l.counted.endpoint) renewOne(keys.inflight(l.endpointHash), l.id);
      if (l.counted.domain) renewOne(keys.domainInflight(l.host), l.id);
    }
    // No lease in a set ends later than now + lease, so its TTL can move there too.
    for (const key of touched) pipe.pexpire(key, p.inflightLeaseMs);
    await execPipeline(pipe);
  }

  async endpoint(hash: string, now: number, p: GuardParams): Promise<EndpointView> {
    const pipe = this.redis.pipeline();
    pipe.hgetall(keys.circuit(hash));
    pipe.zcount(keys.inflight(hash), `(${now}`, '+inf');
    pipe.get(keys.pause('endpoint', hash));
    pipe.llen(keys.pausedQueue('endpoint', hash));
    pipe.lrange(keys.endpointErrors(hash), 0, 9);
    pipe.hgetall(keys.endpointLimit(hash));
    pipe.lrange(keys.endpointLatency(hash), 0, -1);
    pipe.zcount(keys.endpointQueued(hash), now - QUEUED_WINDOW_MS, '+inf');
    const [c, inflight, pause, held, errors, lim, lat, queued] = (await execPipeline(pipe)) as [
      Record<string, string>,
      number,
      string | null,
      number,
      string[],
      Record<string, string>,
      string[],
      number,
    ];
    const s: LimitState = lim.limit ? { limit: Number(lim.limit), minMs: Number(lim.min), latMs: Number(lim.lat), timeoutAt: Number(lim.timeout_at) } : freshLimit(p.limits);
    const samples = lat.map((e) => {
      const i = e.indexOf(':');
      return { at: Number(e.slice(0, i)), ms: Number(e.slice(i + 1)) };
    });
    const state = (c.state ?? 'CLOSED') as CircuitState;
    const openUntil = Number(c.open_until ?? 0);
    return {
      endpoint_hash: hash,
      circuit: {
        state: state === 'OPEN' && now >= openUntil ? 'HALF_OPEN' : state,
        failures: Number(c.failures ?? 0),
        open_until: state === 'CLOSED' ? null : openUntil,
        successes: Number(c.successes ?? 0),
        opened_count: Number(c.opened_count ?? 0),
      },
      inflight,
      paused: pause?.startsWith('paused') ?? false,
      draining: pause?.startsWith('draining') ?? false,
      parked_while_paused: held,
      last_errors: errors.map((e) => JSON.parse(e) as { at: string; error: string }),
      concurrency: concurrencyView(s, samples, inflight, queued, now, p),
    };
  }

  gauges(now: number): Promise<GuardGauges | null> {
    return readGuardGauges(this.redis, now);
  }

  async resetCircuit(hash: string): Promise<void> {
    await call(() => this.redis.del(keys.circuit(hash)));
  }

  async pause(s: PauseScope): Promise<void> {
    await call(() => this.redis.howk_pauseScope(keys.pause(s.kind, s.id)));
  }

  async restorePauses(scopes: PauseScope[]): Promise<number> {
    if (!scopes.length) return 0;
    const pipe = this.redis.pipeline();
    for (const s of scopes) pipe.set(keys.pause(s.kind, s.id), 'paused', 'NX');
    return ((await execPipeline(pipe)) as unknown[]).filter((r) => r === 'OK').length;
  }

  async restoreCircuits(items: CircuitRestore[]): Promise<number> {
    if (!items.length) return 0;
    const pipe = scriptedPipeline(this.redis);
    for (const c of items) pipe.howk_restoreCircuit(keys.circuit(c.endpointHash), c.openUntil, c.openedCount, Math.max(1, Math.ceil(c.ttlMs)));
    return ((await execPipeline(pipe)) as unknown[]).filter((r) => Number(r) === 1).length;
  }

  async restoreHeld(s: PauseScope, items: HeldRestore[]): Promise<number | null> {
    if (!items.length) return 0;
    const n = Number(await call(() => this.redis.howk_restoreHeld(keys.pause(s.kind, s.id), keys.pausedQueue(s.kind, s.id), ...items.map((i) => i.data))));
    return n < 0 ? null : n;
  }

  async holdPaused(s: PauseScope, data: string, releasedBy: readonly string[] = []): Promise<HoldResult> {
    const r = Number(await call(() => this.redis.howk_holdPaused(keys.pause(s.kind, s.id), keys.pausedQueue(s.kind, s.id), data, releasedBy.join(','))));
    return r === 1 ? 'held' : r === 2 ? 'released' : 'gone';
  }

  async resume(s: PauseScope, drain: string, now: number, leaseMs: number): Promise<ResumeResult> {
    return (await call(() => this.redis.howk_resumeScope(keys.pause(s.kind, s.id), drain, now, leaseMs))) as ResumeResult;
  }

  async peekHeld(s: PauseScope, limit: number): Promise<string[]> {
    // LRANGE 0 -1 would be the whole queue.
    if (limit <= 0) return [];
    return call(() => this.redis.lrange(keys.pausedQueue(s.kind, s.id), 0, limit - 1));
  }

  async takeHeld(s: PauseScope, drain: string, limit: number, now: number, leaseMs: number): Promise<TakeHeldResult> {
    const r = (await call(() => this.redis.howk_takeHeld(keys.pause(s.kind, s.id), keys.pausedQueue(s.kind, s.id), drain, now, leaseMs, Math.max(1, limit)))) as [
      string,
      string[]?,
    ];
    return r[0] === 'batch' ? { kind: 'batch', items: r[1] ?? [] } : { kind: r[0] as 'paused' | 'lost' | 'done' };
  }

  async dropHeld(s: PauseScope, drain: string, n: number): Promise<number> {
    return Number(await call(() => this.redis.howk_dropHeld(keys.pause(s.kind, s.id), keys.pausedQueue(s.kind, s.id), drain, n)));
  }
}
