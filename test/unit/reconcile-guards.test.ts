import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../core/config/load';
import { encodeWebhook } from '../../core/records/webhook';
import { MemoryGuards } from '../../core/memory/guards';
import { MemoryHotState } from '../../core/memory/hot-state';
import { MemoryLog } from '../../core/memory/log';
import { MemoryTopicReader } from '../../core/memory/topic-reader';
import { journaledGuards } from '../../core/pipeline/guard-journal';
import { guardParams } from '../../core/pipeline/guard-params';
import { silentLogger } from '../../core/ports/logger';
import type { PauseScope } from '../../core/ports/guards';
import { UnavailableError } from '../../core/errors/errors';
import type { LogProducer } from '../../core/ports/log';
import { createReconciler } from '../../core/reconcile/reconciler';
import { snapshotValue } from '../../core/records/state';
import { T0, hook, stamp } from '../helpers/reconcile-fixtures';

// What a rebuild does with howk.guards, on the in-memory adapters: the journal (the guards the
// api and the worker use) records pauses, resumes, resets and circuit transitions; the rebuild
// restores the pauses, the open circuits and the held webhooks behind the pauses in force.

const config = loadConfig({
  env: {},
  overrides: { 'kafka.topics': { state: 's.state', deadletter: 's.dl', guards: 's.guards' }, 'reconciler.restore_batch': 2, 'ttl.circuit_state_ttl': 3_600_000 },
});
const TTLS = { status_ttl: 7 * 86_400_000, stats_ttl: 86_400_000, retry_data_ttl: 7 * 86_400_000 };
const EP = 'ab'.repeat(16);
const EPS: PauseScope = { kind: 'endpoint', id: EP };
const CFGS: PauseScope = { kind: 'config', id: 'cfg_r' };

const world = () => {
  let now = T0 + 60_000;
  const clock = { now: () => now };
  const log = new MemoryLog(2);
  const journal = (g: MemoryGuards) => journaledGuards(g, { producer: log.producer(), topic: 's.guards', log: silentLogger, now: clock.now });
  const before = journal(new MemoryGuards());
  /** Redis after the loss: empty. */
  const hot = new MemoryHotState(TTLS, clock);
  const after = new MemoryGuards();
  const rebuild = () => createReconciler({ config, hot, reader: new MemoryTopicReader(log), log: silentLogger, clock, owner: 'a', guards: after }).rebuildNow();
  /** A webhook held by a pause at `at`: its snapshot, as the worker writes it before holding it. */
  const held = (id: string, at: number, patch = {}) => {
    const w = hook(id, { attempt: 0, ...patch });
    const ns = stamp(at);
    log.append([{ topic: 's.state', key: id, value: snapshotValue(w, { webhook_id: id, updated_at_ns: ns, held: 'paused', next_retry_at: null }, at) }]);
    return encodeWebhook(w);
  };
  return { clock, advance: (ms: number) => (now += ms), log, before, hot, after, rebuild, held };
};

describe('rebuild of pauses, held webhooks and circuits', () => {
  it('puts the held webhooks back behind a pause still in force, in the order they were held, and schedules none of them', async () => {
    const w = world();
    await w.before.pause(EPS);
    const c = w.held('wh_c', T0 + 3);
    const a = w.held('wh_a', T0 + 1);
    const b = w.held('wh_b', T0 + 2);
    const s = await w.rebuild();
    expect(s.guards).toMatchObject({ pauses: 1, held: 3 });
    expect(await w.after.peekHeld(EPS, 10)).toEqual([a, b, c]);
    expect(await w.hot.retryCount()).toBe(0);
    expect(await w.hot.getStatus('wh_a')).toMatchObject({ state: 'pending', held: 'paused' });
    // A second rebuild (a lock lost to a stall) holds nothing twice.
    await w.rebuild();
    expect(await w.after.peekHeld(EPS, 10)).toEqual([a, b, c]);
  });

  it('a config pause holds its webhooks when the endpoint is not paused; a resumed scope has its webhooks scheduled for delivery', async () => {
    const w = world();
    await w.before.pause(CFGS);
    const x = w.held('wh_x', T0 + 1);
    const other = w.held('wh_y', T0 + 2, { config_id: 'cfg_other', endpoint_hash: 'cd'.repeat(16) });
    await w.before.pause({ kind: 'config', id: 'cfg_other' });
    await w.before.resume({ kind: 'config', id: 'cfg_other' }, 'd1', w.clock.now(), 30_000);
    await w.rebuild();
    expect(await w.after.peekHeld(CFGS, 10)).toEqual([x]);
    expect(await w.after.peekHeld({ kind: 'config', id: 'cfg_other' }, 10)).toEqual([]);
    const due = await w.hot.claimDueRetries(w.clock.now() + 86_400_000, 10, 1);
    expect(due.map((r) => [r.id, r.data])).toEqual([['wh_y', other]]);
    const [adm] = await w.after.admit([{ endpointHash: EP, host: 'example.com', configId: 'cfg_other', lane: 'fast', now: w.clock.now(), id: 'wh_y' }], guardParams(config));
    expect(adm).toMatchObject({ kind: 'go' });
  });

  it('restores an open circuit (re-opened by a failed probe) and not one closed since, reset, or past its TTL', async () => {
    const w = world();
    const p = guardParams(config);
    const fail = (hash: string, now: number, probe = false) =>
      w.before.complete([{ id: 'x', endpointHash: hash, host: 'h', now, outcome: 'failure', probe, counted: { endpoint: false, domain: false } }], p);
    const open = async (hash: string, now: number) => {
      for (let i = 0; i < config.circuit_breaker.failure_threshold; i++) await fail(hash, now + i);
    };
    const t = w.clock.now();
    await open(EP, t);
    const recovery = config.circuit_breaker.recovery_timeout;
    // EP's probe fails: open again until then + probe_interval.
    const [probe] = await w.before.admit([{ endpointHash: EP, host: 'h', configId: 'c', lane: 'fast', now: t + recovery + 10, id: 'p' }], p);
    expect(probe).toMatchObject({ kind: 'go', probe: true });
    await fail(EP, t + recovery + 20, true);
    await open('11'.repeat(16), t);
    await w.before.resetCircuit('11'.repeat(16));
    await open('22'.repeat(16), t - 2 * 3_600_000);
    const s = await w.rebuild();
    expect(s.guards).toMatchObject({ circuits: 1, expired: 1 });
    const v = await w.after.endpoint(EP, t, p);
    expect(v.circuit).toMatchObject({ state: 'OPEN', open_until: t + recovery + 20 + config.circuit_breaker.probe_interval, opened_count: 1 });
    expect((await w.after.endpoint('11'.repeat(16), t, p)).circuit.state).toBe('CLOSED');
    expect((await w.after.endpoint('22'.repeat(16), t, p)).circuit.state).toBe('CLOSED');
  });

  it('journal: a pause is on the topic before Redis (a failed produce pauses nothing); deliveries that move no circuit produce nothing', async () => {
    const w = world();
    const down: LogProducer = { send: async () => Promise.reject(new UnavailableError('kafka: down')), close: async () => {} };
    const inner = new MemoryGuards();
    const g = journaledGuards(inner, { producer: down, topic: 's.guards', log: silentLogger, now: w.clock.now });
    await expect(g.pause(EPS)).rejects.toThrow(UnavailableError);
    expect((await inner.endpoint(EP, w.clock.now(), guardParams(config))).paused).toBe(false);
    // Successes and failures below the threshold: no record; the opening failure: one.
    const p = guardParams(config);
    const done = (outcome: 'success' | 'failure', i: number) => ({
      id: `w${i}`,
      endpointHash: EP,
      host: 'h',
      now: w.clock.now() + i,
      outcome,
      probe: false,
      counted: { endpoint: false, domain: false },
    });
    await w.before.complete(
      Array.from({ length: 100 }, (_, i) => done('success', i)),
      p,
    );
    for (let i = 1; i < config.circuit_breaker.failure_threshold; i++) await w.before.complete([done('failure', 100 + i)], p);
    expect(w.log.records('s.guards')).toHaveLength(0);
    await w.before.complete([done('failure', 200)], p);
    expect(w.log.records('s.guards').map((r) => r.key)).toEqual([`circuit:${EP}`]);
  });
});
