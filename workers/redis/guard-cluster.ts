import type { RedisKeys } from '../../core/domain/keys';
import type { Admission, AdmitRequest, CircuitTransition, Completion, GuardParams } from '../../core/ports/guards';
import { execPipeline } from './exec';
import { ADMIT, COMPLETE, admitArgs, completeArgs, toAdmissions, transitionsAt } from './guard-calls';
import type { RespArgs } from './resp';
import type { BatchScript } from './script-call';
import { pipe, slotOf } from './slots';
import { forCluster, type ScriptedClient } from './scripts';
import { batchScript } from './script-call';

// Admission and completion on a Redis Cluster (docs/ARCHITECTURE.md, "Redis Cluster: what
// stays atomic"). An endpoint's guard keys share its hash tag, so one admitDelivery
// (completeDelivery) call per endpoint slot decides its requests atomically, as on one
// Redis; the calls of different slots go out together. The canary and the config pauses live
// in other slots: admission reads them first, one round trip before the calls. A host's
// in-flight limit is another slot too: its lease is taken first (takeHostLease-1.lua), then
// the endpoint decides, and a lease the endpoint refused is given back (docs/ARCHITECTURE.md,
// "The per-host limit on a cluster: host first").

/** One script call per slot of the items' endpoints, in parallel; `run` gets the slot's items and their indexes. */
const perSlot = async <T extends { endpointHash: string }, R>(k: RedisKeys, items: T[], run: (slotItems: T[], slotKey: string, at: number[]) => Promise<R>): Promise<R[]> => {
  const groups = new Map<number, number[]>();
  items.forEach((it, i) => {
    const slot = slotOf(k.inflight(it.endpointHash));
    const g = groups.get(slot);
    if (g) g.push(i);
    else groups.set(slot, [i]);
  });
  return Promise.all(
    [...groups.values()].map((at) =>
      run(
        at.map((i) => items[i]!),
        k.inflight(items[at[0]!]!.endpointHash),
        at,
      ),
    ),
  );
};

type Call = (script: BatchScript, args: RespArgs, slotKey: string) => Promise<unknown>;

const CLUSTER_ADMIT = batchScript(forCluster(ADMIT.lua));
const CLUSTER_COMPLETE = batchScript(forCluster(COMPLETE.lua));

/** Which requests the config pause (or the endpoint pause before it) stops, read before the calls. */
const pausesBefore = async (redis: ScriptedClient, k: RedisKeys, reqs: AdmitRequest[], p: GuardParams): Promise<{ rebuilding: boolean; stopped: (Admission | undefined)[] }> => {
  const checked = reqs.filter((r) => !r.passPause?.includes('config'));
  const configs = [...new Set(checked.map((r) => r.configId))];
  const pre = pipe(redis);
  if (p.requireCanary) pre.exists(k.canary());
  for (const c of configs) pre.exists(k.pause('config', c));
  const got = (await execPipeline(pre)) as number[];
  const rebuilding = p.requireCanary === true && got[0] === 0;
  const paused = new Set(configs.filter((_, i) => got[i + (p.requireCanary ? 1 : 0)] === 1));
  const stopped: (Admission | undefined)[] = reqs.map(() => undefined);
  if (rebuilding || !paused.size) return { rebuilding, stopped };
  // An endpoint pause answers first, as on one Redis: read the endpoints of the stopped ones.
  const held = reqs.map((r, i) => (paused.has(r.configId) && !r.passPause?.includes('config') ? i : -1)).filter((i) => i >= 0);
  const eps = pipe(redis);
  for (const i of held) eps.exists(k.pause('endpoint', reqs[i]!.endpointHash));
  const epPaused = (await execPipeline(eps)) as number[];
  held.forEach((i, j) => {
    const byEndpoint = epPaused[j] === 1 && !reqs[i]!.passPause?.includes('endpoint');
    stopped[i] = { kind: 'paused', scope: byEndpoint ? 'endpoint' : 'config' };
  });
  return { rebuilding, stopped };
};

/**
 * The host step, before the endpoint calls: one takeHostLease call per host with a limit
 * (in its slot), for the requests `open` names. Answers 'wait' in `out` for those its host
 * refuses; `held` gets those whose webhook held its lease already, and the indexes of those
 * newly leased are returned.
 */
const hostLeases = async (
  redis: ScriptedClient,
  k: RedisKeys,
  reqs: AdmitRequest[],
  open: number[],
  out: (Admission | undefined)[],
  held: Set<number>,
  p: GuardParams,
): Promise<Set<number>> => {
  const byHost = new Map<string, number[]>();
  for (const i of open) {
    if (p.maxInflightPerDomain(reqs[i]!.host) <= 0) continue;
    const g = byHost.get(reqs[i]!.host);
    if (g) g.push(i);
    else byHost.set(reqs[i]!.host, [i]);
  }
  const leased = new Set<number>();
  if (!byHost.size) return leased;
  const q = pipe(redis);
  for (const [host, at] of byHost) q.howk_takeHostLease(k.domainInflight(host), p.maxInflightPerDomain(host), p.inflightLeaseMs, ...at.flatMap((i) => [reqs[i]!.now, reqs[i]!.id]));
  const replies = (await execPipeline(q)) as number[][];
  [...byHost.values()].forEach((at, h) =>
    at.forEach((i, n) => {
      // A lease taken over (2) stays when its endpoint refuses: another copy of the webhook
      // holds it (workers/redis/commands/takeHostLease-1.lua).
      if (replies[h]![n] === 1) leased.add(i);
      else if (replies[h]![n] === 2) held.add(i);
      // A full host: both lanes wait (the endpoint's slowness, which would divert, is in
      // another slot), and the endpoint is not asked (it takes nothing).
      else out[i] = { kind: 'wait' };
    }),
  );
  return leased;
};

export const clusterAdmit = async (redis: ScriptedClient, k: RedisKeys, call: Call, reqs: AdmitRequest[], p: GuardParams): Promise<Admission[]> => {
  const { rebuilding, stopped } = await pausesBefore(redis, k, reqs, p);
  // Redis lost and not rebuilt yet: ask again later, as the script answers on one Redis.
  if (rebuilding) return reqs.map(() => ({ kind: 'wait' }));
  const out = stopped.slice();
  const held = new Set<number>();
  const leased = await hostLeases(
    redis,
    k,
    reqs,
    reqs.map((_, i) => i).filter((i) => !stopped[i]),
    out,
    held,
    p,
  );
  const open = reqs.map((_, i) => i).filter((i) => !out[i]);
  try {
    await perSlot(
      k,
      open.map((i) => reqs[i]!),
      async (slotReqs, slotKey, at) => {
        const answers = toAdmissions(await call(CLUSTER_ADMIT, admitArgs(slotReqs, p, k, true), slotKey));
        at.forEach((j, n) => (out[open[j]!] = answers[n]));
      },
    );
  } catch (err) {
    // The caller asks again: the host leases of this try are not left to expire.
    await giveBack(redis, k, reqs, [...leased]).catch(() => undefined);
    throw err;
  }
  // A host lease of a request its endpoint refused is given back (one more round trip); the
  // others are counted on the host, and end with the delivery's completion or lease.
  const refused: number[] = [];
  for (const i of [...leased, ...held]) {
    const a = out[i]!;
    if (a.kind === 'go') a.counted = { ...a.counted, domain: true };
    else if (leased.has(i)) refused.push(i);
  }
  await giveBack(redis, k, reqs, refused);
  return out as Admission[];
};

const giveBack = async (redis: ScriptedClient, k: RedisKeys, reqs: AdmitRequest[], at: number[]): Promise<void> => {
  if (!at.length) return;
  const q = pipe(redis);
  for (const i of at) q.zrem(k.domainInflight(reqs[i]!.host), reqs[i]!.id);
  await execPipeline(q);
};

export const clusterComplete = async (redis: ScriptedClient, k: RedisKeys, call: Call, done: Completion[], p: GuardParams): Promise<CircuitTransition[]> => {
  const moved: { at: number; t: CircuitTransition }[] = [];
  // A host lease ends in its host's slot, beside the endpoint calls (the host's limit on a
  // cluster is its fixed ceiling: no sample moves it).
  const hosts = done.filter((d) => d.counted.domain);
  const ends = pipe(redis);
  for (const d of hosts) ends.zrem(k.domainInflight(d.host), d.id);
  const endpointDone = done.map((d) => (d.counted.domain ? { ...d, counted: { ...d.counted, domain: false } } : d));
  await Promise.all([
    hosts.length ? execPipeline(ends) : undefined,
    perSlot(k, endpointDone, async (slotDone, slotKey, at) => {
      for (const m of transitionsAt(await call(CLUSTER_COMPLETE, completeArgs(slotDone, p, k, true), slotKey), slotDone)) moved.push({ at: at[m.i]!, t: m.t });
    }),
  ]);
  return moved.sort((a, b) => a.at - b.at).map((m) => m.t);
};
