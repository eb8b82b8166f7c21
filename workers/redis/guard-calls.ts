import type { Buffer } from 'node:buffer';
import { keys, scriptPrefix, slotId, type RedisKeys } from '../../core/domain/keys';
import { LATENCY_SAMPLES } from '../../core/policy/adaptive-limit';
import type { Admission, AdmitRequest, CircuitTransition, Completion, GuardParams } from '../../core/ports/guards';
import { RespArgs } from './resp';
import type { MarksSection } from './riding-marks';
import { batchScript } from './script-call';
import { BATCH_SCRIPTS } from './scripts';

// The admitDelivery and completeDelivery calls of RedisGuards (workers/redis/guards.ts): their
// arguments, encoded as they are built (workers/redis/resp.ts), in the layout the scripts'
// headers give, and their replies read as ioredis's parser gives them.

const limitArgs = (w: RespArgs, p: GuardParams) =>
  w.num(p.limits.initial).num(p.limits.floor).num(p.limits.tolerance).num(p.limits.slowThresholdMs).num(p.limits.windowMs).num(p.limits.ceiling);

export const ADMIT = batchScript(BATCH_SCRIPTS.admitDelivery);
export const COMPLETE = batchScript(BATCH_SCRIPTS.completeDelivery);

// The key prefixes the scripts build their keys from, in their headers' order.
const admitPrefixes = (k: RedisKeys) =>
  [
    k.pause('endpoint', ''),
    k.pause('config', ''),
    k.circuit(''),
    k.rateBucket(''),
    k.domainInflight(''),
    k.inflight(''),
    k.endpointLimit(''),
    k.domainLimit(''),
    k.endpointQueued(''),
  ].map(scriptPrefix);
const completePrefixes = (k: RedisKeys) =>
  [k.circuit(''), k.inflight(''), k.domainInflight(''), k.endpointErrors(''), k.endpointLimit(''), k.domainLimit(''), k.endpointLatency('')].map(scriptPrefix);
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
  /** On a cluster, hashes and hosts go as hash tags: the keys the scripts build from them then sit in their slot. */
  constructor(
    private readonly p: GuardParams,
    private readonly cluster = false,
  ) {}

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
    for (let i = 0; i < this.entries.length; i += 2) w.str(slotId(this.cluster, this.entries[i] as string)).num(this.entries[i + 1] as number);
    w.num(this.hosts.size);
    // On a cluster a host's keys are another slot than its endpoints': its limit is kept
    // apart (workers/redis/guard-cluster.ts), the endpoint call is told it is off.
    for (const host of this.hosts.keys()) w.str(slotId(this.cluster, host)).num(this.cluster ? 0 : this.p.maxInflightPerDomain(host));
  }
}

/**
 * The arguments every call begins with (the params and the key prefixes), encoded once per
 * GuardParams: a worker builds its params once from its config and never changes them.
 */
type Shared = { admit: RespArgs; complete: RespArgs; clusterAdmit: RespArgs };
const shared = new WeakMap<GuardParams, Map<RedisKeys, Shared>>();
const sharedArgs = (p: GuardParams, k: RedisKeys): Shared => {
  let byLayout = shared.get(p);
  if (!byLayout) shared.set(p, (byLayout = new Map()));
  let s = byLayout.get(k);
  if (!s) byLayout.set(k, (s = { admit: admitShared(p, k, true), complete: completeShared(p, k), clusterAdmit: admitShared(p, k, false) }));
  return s;
};

/** Without `canary`, the call does not check it: on a cluster the caller reads it first (another slot). */
const admitShared = (p: GuardParams, k: RedisKeys, canary: boolean) => {
  const w = new RespArgs()
    .num(p.circuit.enabled ? 1 : 0)
    .num(p.circuit.probe_interval)
    .num(p.circuitTtlMs)
    .num(p.rate)
    .num(p.burst)
    .num(p.maxInflightPerEndpoint)
    .num(p.inflightLeaseMs);
  limitArgs(w, p).str(canary && p.requireCanary ? k.canary() : '');
  for (const prefix of admitPrefixes(k)) w.str(prefix);
  return w;
};

const completeShared = (p: GuardParams, k: RedisKeys) => {
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
  for (const prefix of completePrefixes(k)) w.str(prefix);
  return w;
};

/** A reply item as ioredis's parser gives it: a bulk string as a Buffer, an integer as a number. */
type Raw = Buffer | number;
const text = (x: Raw | undefined): string => String(x);
const num = (x: Raw | undefined): number => (typeof x === 'number' ? x : Number(x?.toString('latin1')));
const [G, P, D, R, E] = ['g', 'p', 'd', 'r', 'e'].map((c) => c.charCodeAt(0));

/**
 * admitDelivery.lua's flat reply, one answer per request: each answer's kind (told apart by
 * its first letter and, for 'park'/'paused' and 'recovered'/'rebuilding', its length) gives
 * how many fields follow.
 */
export const toAdmissions = (reply: unknown): Admission[] => {
  const flat = reply as Raw[];
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
    } else if (first === E) {
      out.push({ kind: 'elsewhere', until: num(flat[i + 1]) });
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

/**
 * admitDelivery's arguments for these requests. On a cluster (`cluster`) the call is one
 * endpoint slot's: the caller has read the canary and the config pauses (other slots), and
 * every request passes the config pause here.
 */
export const admitArgs = (reqs: AdmitRequest[], p: GuardParams, k: RedisKeys = keys, cluster = false): RespArgs => {
  const w = new RespArgs().append(cluster ? sharedArgs(p, k).clusterAdmit : sharedArgs(p, k).admit);
  const at = new Places(p, cluster);
  const configs = new Map<string, number>();
  const per = new RespArgs();
  let now: number | undefined;
  for (const r of reqs) {
    let config = configs.get(r.configId);
    if (config === undefined) configs.set(r.configId, (config = configs.size + 1));
    const pass = r.passPause ?? [];
    // The endpoint's own ceiling rides above the flag bits (32 per unit): no argument more per request.
    const flags =
      (r.waited ? 1 : 0) +
      (r.lane === 'slow' ? 2 : 0) +
      (pass.includes('endpoint') ? 4 : 0) +
      (cluster || pass.includes('config') ? 8 : 0) +
      (r.copy ? 16 : 0) +
      (r.ceiling ?? 0) * 32;
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
  return w;
};

/** completeDelivery's arguments for these completions, with the sent marks riding the call (one Redis only). */
export const completeArgs = (done: Completion[], p: GuardParams, k: RedisKeys = keys, cluster = false, marks?: MarksSection): RespArgs => {
  const w = new RespArgs().append(sharedArgs(p, k).complete);
  const at = new Places(p, cluster);
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
  if (marks) marks.write(w);
  else w.num(0);
  w.append(per);
  return w;
};

/** completeDelivery's reply: the circuit transitions of these completions, each with its completion's index. */
export const transitionsAt = (raw: unknown, done: Completion[]): { i: number; t: CircuitTransition }[] => {
  const reply = raw as [Buffer, ...Raw[]];
  // One code per completion; a 'T' (this completion opened or closed the circuit) has its
  // triple next in the reply.
  const moved: { i: number; t: CircuitTransition }[] = [];
  const codes = reply[0];
  for (let i = 0, t = 1; i < codes.length; i++) {
    if (codes[i] !== T_CODE) continue;
    const state = text(reply[t]);
    moved.push({
      i,
      t: { endpointHash: done[i]!.endpointHash, state: state === 'CLOSED' ? 'CLOSED' : 'OPEN', at: done[i]!.now, openUntil: num(reply[t + 1]), openedCount: num(reply[t + 2]) },
    });
    t += 3;
  }
  return moved;
};

/** completeDelivery's reply: the circuit transitions of these completions. */
export const toTransitions = (raw: unknown, done: Completion[]): CircuitTransition[] => transitionsAt(raw, done).map((m) => m.t);
