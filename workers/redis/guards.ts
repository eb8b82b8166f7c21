import type { Redis } from 'ioredis';
import { clusterKeys, keys, type RedisKeys } from '../../core/domain/keys';
import { freshLimit, QUEUED_WINDOW_MS, type LimitState } from '../../core/policy/adaptive-limit';
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
import { ADMIT, COMPLETE, admitArgs, completeArgs, toAdmissions, toTransitions } from './guard-calls';
import { clusterAdmit, clusterComplete } from './guard-cluster';
import type { RespArgs } from './resp';
import type { RidingMarks } from './riding-marks';
import { callScript, type BatchScript } from './script-call';
import { withScripts, type ScriptedClient } from './scripts';
import { pipe } from './slots';

// Guards on Redis: every admission (completion) a worker asks for at once goes in one
// admitDelivery (completeDelivery) script call: one round trip and one script run. Their
// arguments and replies: workers/redis/guard-calls.ts. On a Redis Cluster, one call per
// endpoint slot (workers/redis/guard-cluster.ts).

export class RedisGuards implements Guards {
  private readonly redis: ScriptedClient;
  /** The key layout: clusterKeys on a cluster (each endpoint's keys in one slot). */
  private readonly k: RedisKeys;
  /**
   * `layout`: another key layout than the client's (tests sharing a cluster give each theirs:
   * keys.ts, namespaced); `riding`: sent marks that leave with this connection's next
   * completion call (workers/redis/riding-marks.ts), one command for both.
   */
  constructor(
    redis: Redis,
    layout?: RedisKeys,
    private readonly riding?: RidingMarks,
  ) {
    this.redis = withScripts(redis);
    this.k = layout ?? (redis.isCluster ? clusterKeys : keys);
  }

  async admit(reqs: AdmitRequest[], p: GuardParams): Promise<Admission[]> {
    if (!reqs.length) return [];
    if (this.redis.isCluster) return clusterAdmit(this.redis, this.k, this.run, reqs, p);
    return toAdmissions(await this.run(ADMIT, admitArgs(reqs, p, this.k)));
  }

  async complete(done: Completion[], p: GuardParams): Promise<CircuitTransition[]> {
    if (!done.length) return [];
    if (this.redis.isCluster) return clusterComplete(this.redis, this.k, this.run, done, p);
    // The sent marks waiting go in the same call (completeDelivery.lua writes them first).
    const marks = this.riding?.take();
    try {
      const moved = toTransitions(await this.run(COMPLETE, completeArgs(done, p, this.k, false, marks)), done);
      marks?.done();
      return moved;
    } catch (e) {
      marks?.fail(e);
      throw e;
    }
  }

  /** One script call, its failures as the rest of Howk sees them (workers/redis/exec.ts). */
  private readonly run = async (script: BatchScript, w: RespArgs, slotKey?: string): Promise<unknown> => {
    try {
      return await callScript(this.redis, script, w, slotKey);
    } catch (err) {
      throw toHowkError(err);
    }
  };

  async renew(leases: InflightLease[], now: number, p: GuardParams): Promise<void> {
    if (!leases.length) return;
    // XX: a lease that ended meanwhile (its completion got there first) is not brought back.
    const q = pipe(this.redis);
    const touched = new Set<string>();
    const renewOne = (key: string, id: string) => {
      q.zadd(key, 'XX', now + p.inflightLeaseMs, id);
      touched.add(key);
    };
    for (const l of leases) {
      if (l.counted.endpoint) renewOne(this.k.inflight(l.endpointHash), l.id);
      if (l.counted.domain) renewOne(this.k.domainInflight(l.host), l.id);
    }
    // No lease in a set ends later than now + lease, so its TTL can move there too.
    for (const key of touched) q.pexpire(key, p.inflightLeaseMs);
    await execPipeline(q);
  }

  async endpoint(hash: string, now: number, p: GuardParams): Promise<EndpointView> {
    const pipe = this.redis.pipeline();
    const keys = this.k;
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
    return readGuardGauges(this.redis, this.k, now);
  }

  async takeToken(hash: string, owner: string, rate: number, burst: number, now: number): Promise<number> {
    return Number(await call(() => this.redis.howk_takeToken(this.k.endpointThrottle(hash, owner), now, rate, burst)));
  }

  async resetCircuit(hash: string): Promise<void> {
    await call(() => this.redis.del(this.k.circuit(hash)));
  }

  async pause(s: PauseScope): Promise<void> {
    await call(() => this.redis.howk_pauseScope(this.k.pause(s.kind, s.id)));
  }

  async restorePauses(scopes: PauseScope[]): Promise<number> {
    if (!scopes.length) return 0;
    const q = pipe(this.redis);
    for (const s of scopes) q.set(this.k.pause(s.kind, s.id), 'paused', 'NX');
    return ((await execPipeline(q)) as unknown[]).filter((r) => r === 'OK').length;
  }

  async restoreCircuits(items: CircuitRestore[]): Promise<number> {
    if (!items.length) return 0;
    const q = pipe(this.redis);
    for (const c of items) q.howk_restoreCircuit(this.k.circuit(c.endpointHash), c.openUntil, c.openedCount, Math.max(1, Math.ceil(c.ttlMs)));
    return ((await execPipeline(q)) as unknown[]).filter((r) => Number(r) === 1).length;
  }

  async restoreHeld(s: PauseScope, items: HeldRestore[]): Promise<number | null> {
    if (!items.length) return 0;
    const n = Number(await call(() => this.redis.howk_restoreHeld(this.k.pause(s.kind, s.id), this.k.pausedQueue(s.kind, s.id), ...items.map((i) => i.data))));
    return n < 0 ? null : n;
  }

  async holdPaused(s: PauseScope, data: string, releasedBy: readonly string[] = []): Promise<HoldResult> {
    const r = Number(await call(() => this.redis.howk_holdPaused(this.k.pause(s.kind, s.id), this.k.pausedQueue(s.kind, s.id), data, releasedBy.join(','))));
    return r === 1 ? 'held' : r === 2 ? 'released' : 'gone';
  }

  async resume(s: PauseScope, drain: string, now: number, leaseMs: number): Promise<ResumeResult> {
    return (await call(() => this.redis.howk_resumeScope(this.k.pause(s.kind, s.id), drain, now, leaseMs))) as ResumeResult;
  }

  async peekHeld(s: PauseScope, limit: number): Promise<string[]> {
    // LRANGE 0 -1 would be the whole queue.
    if (limit <= 0) return [];
    return call(() => this.redis.lrange(this.k.pausedQueue(s.kind, s.id), 0, limit - 1));
  }

  async takeHeld(s: PauseScope, drain: string, limit: number, now: number, leaseMs: number): Promise<TakeHeldResult> {
    const r = (await call(() => this.redis.howk_takeHeld(this.k.pause(s.kind, s.id), this.k.pausedQueue(s.kind, s.id), drain, now, leaseMs, Math.max(1, limit)))) as [
      string,
      string[]?,
    ];
    return r[0] === 'batch' ? { kind: 'batch', items: r[1] ?? [] } : { kind: r[0] as 'paused' | 'lost' | 'done' };
  }

  async dropHeld(s: PauseScope, drain: string, n: number): Promise<number> {
    return Number(await call(() => this.redis.howk_dropHeld(this.k.pause(s.kind, s.id), this.k.pausedQueue(s.kind, s.id), drain, n)));
  }
}
