import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../core/config/load';
import { TERMINAL_STATES } from '../../core/domain/status';
import { encodeWebhook } from '../../core/records/webhook';
import { MemoryHotState } from '../../core/memory/hot-state';
import { MemoryLog } from '../../core/memory/log';
import { createDeliverer } from '../../core/pipeline/deliver';
import { writeLeases } from '../../core/pipeline/lease-keeper';
import { createLocalGuards } from '../../core/pipeline/local-guards';
import { createOwedWrites } from '../../core/pipeline/owed-writes';
import { circuitRecord, pauseRecord, resumeRecord } from '../../core/records/guard';
import { systemClock } from '../../core/ports/clock';
import type { HotBatch, EndedLookup } from '../../core/ports/hot-state';
import type { Guards } from '../../core/ports/guards';
import type { ConsumedBatch } from '../../core/ports/log';
import { silentLogger } from '../../core/ports/logger';
import type { DeliveryResponse, Sender } from '../../core/ports/sender';
import { hook } from '../helpers/reconcile-fixtures';

// The local rules a worker goes by while Redis does not answer (docs/RELIABILITY.md, "Redis
// unreachable: delivery degrades, it does not stop"). The whole path, on a real Redis that
// stops answering, is test/integration/redis-degraded.test.ts.

const CIRCUIT = { enabled: true, failure_threshold: 2, failure_window: 60_000, recovery_timeout: 10_000, probe_interval: 5_000, success_threshold: 1 };
const TTLS = { status_ttl: 86_400_000, stats_ttl: 86_400_000, retry_data_ttl: 86_400_000 };

describe('local guards (no Redis)', () => {
  it('lets at most the local bound of one endpoint and of one host go at once, and one more once one ends', () => {
    const g = createLocalGuards({ perEndpoint: 2, perHost: 3 }, CIRCUIT);
    expect(g.admit('a1', 'ep-a', 'h', 'c', 0).kind).toBe('go');
    expect(g.admit('a2', 'ep-a', 'h', 'c', 0).kind).toBe('go');
    expect(g.admit('a3', 'ep-a', 'h', 'c', 0)).toEqual({ kind: 'wait' });
    expect(g.admit('b1', 'ep-b', 'h', 'c', 0).kind).toBe('go');
    expect(g.admit('b2', 'ep-b', 'h', 'c', 0)).toEqual({ kind: 'wait' }); // the host's 3
    g.ended('a1');
    g.ended('a1'); // once only
    expect(g.admit('b2', 'ep-b', 'h', 'c', 0).kind).toBe('go');
    expect(g.admit('a3', 'ep-a', 'h', 'c', 0)).toEqual({ kind: 'wait' });
  });

  it("holds an endpoint to its own concurrency ceiling when it is below the local bound (a Svix endpoint's maxConcurrency)", () => {
    const g = createLocalGuards({ perEndpoint: 2, perHost: 4 }, CIRCUIT);
    expect(g.admit('a1', 'ep-a', 'h', 'c', 0, [], 1).kind).toBe('go');
    expect(g.admit('a2', 'ep-a', 'h', 'c', 0, [], 1)).toEqual({ kind: 'wait' });
    expect(g.admit('b1', 'ep-b', 'h', 'c', 0).kind).toBe('go'); // another endpoint: the local bound
    g.ended('a1');
    expect(g.admit('a2', 'ep-a', 'h', 'c', 0, [], 1).kind).toBe('go');
  });

  it('counts deliveries Redis let go before it left against the local bound', () => {
    const g = createLocalGuards({ perEndpoint: 2, perHost: 10 }, CIRCUIT);
    g.learn('ep', 'c', { kind: 'go', probe: false, counted: { endpoint: true, domain: false } }, 0);
    g.started('r1', 'ep', 'h');
    g.started('r2', 'ep', 'h');
    expect(g.admit('x', 'ep', 'h', 'c', 0)).toEqual({ kind: 'wait' });
  });

  it('keeps a pause of the guards topic, and one a Redis answer reported, until they end', () => {
    const g = createLocalGuards({ perEndpoint: 5, perHost: 5 }, CIRCUIT);
    const p = pauseRecord({ kind: 'endpoint', id: 'ep' }, 0);
    g.applyRecord(p.key, p.value);
    expect(g.admit('1', 'ep', 'h', 'c', 0)).toEqual({ kind: 'paused', scope: 'endpoint' });
    const r = resumeRecord({ kind: 'endpoint', id: 'ep' });
    g.applyRecord(r.key, r.value);
    expect(g.admit('2', 'ep', 'h', 'c', 0).kind).toBe('go');
    // A config paused as Redis last said: its webhooks wait until Redis lets one of them go.
    g.learn('ep2', 'cfg', { kind: 'paused', scope: 'config' }, 0);
    expect(g.admit('3', 'ep3', 'h', 'cfg', 0)).toEqual({ kind: 'paused', scope: 'config' });
    // A drain that released the webhook lets it past its pause.
    expect(g.admit('4', 'ep3', 'h', 'cfg', 0, ['config']).kind).toBe('go');
    g.learn('ep3', 'cfg', { kind: 'go', probe: false, counted: { endpoint: true, domain: false } }, 0);
    expect(g.admit('5', 'ep3', 'h', 'cfg', 0).kind).toBe('go');
  });

  it('reads the guards topic as every compacted table does: a malformed record, or one under another key, changes nothing and is told', () => {
    const warned: unknown[] = [];
    const log = { ...silentLogger, warn: (_msg: string, f?: Record<string, unknown>) => void warned.push(f?.key) };
    const g = createLocalGuards({ perEndpoint: 5, perHost: 5 }, CIRCUIT, log);
    const p = pauseRecord({ kind: 'endpoint', id: 'ep' }, 0);
    // ep's pause record under ep2's key: ep2 is not paused by it.
    g.applyRecord('pause:endpoint:ep2', p.value);
    g.applyRecord('pause:config:cfg', 'not json');
    expect(g.admit('1', 'ep2', 'h', 'cfg', 0).kind).toBe('go');
    // ep paused, then a malformed record of its key: the pause stays (its last good record).
    g.applyRecord(p.key, p.value);
    g.applyRecord(p.key, '{"type":"pause"}');
    expect(g.admit('2', 'ep', 'h', 'c', 0)).toEqual({ kind: 'paused', scope: 'endpoint' });
    // An open circuit, then garbage under its key: still open.
    const c = circuitRecord({ endpointHash: 'ep3', state: 'OPEN', openUntil: 10_000, openedCount: 1, at: 0 });
    g.applyRecord(c.key, c.value);
    g.applyRecord(c.key, '{');
    expect(g.admit('3', 'ep3', 'h', 'c', 5_000)).toEqual({ kind: 'park', until: 10_000 });
    expect(warned).toEqual(['pause:endpoint:ep2', 'pause:config:cfg', p.key, c.key]);
  });

  it('keeps an open circuit open until its time, then one probe per probe interval', () => {
    const g = createLocalGuards({ perEndpoint: 5, perHost: 5 }, CIRCUIT);
    const rec = circuitRecord({ endpointHash: 'ep', state: 'OPEN', openUntil: 10_000, openedCount: 1, at: 0 });
    g.applyRecord(rec.key, rec.value);
    expect(g.admit('1', 'ep', 'h', 'c', 5_000)).toEqual({ kind: 'park', until: 10_000 });
    expect(g.admit('2', 'ep', 'h', 'c', 10_000)).toEqual({ kind: 'go', probe: true });
    expect(g.admit('3', 'ep', 'h', 'c', 11_000)).toEqual({ kind: 'park', until: 15_000 });
    // From a Redis answer too, and failures seen locally open it.
    g.learn('ep2', 'c', { kind: 'park', reason: 'circuit_open', until: 20_000 }, 0);
    expect(g.admit('4', 'ep2', 'h', 'c', 1_000)).toEqual({ kind: 'park', until: 20_000 });
    g.outcome('ep3', 1_000, 'failure', false);
    g.outcome('ep3', 1_001, 'failure', false);
    expect(g.admit('5', 'ep3', 'h', 'c', 2_000)).toEqual({ kind: 'park', until: 11_001 });
  });
});

describe('outcomes written while Redis is away', () => {
  it('are owed and written once Redis answers, oldest first, within max_owed_statuses', async () => {
    const applied: HotBatch[] = [];
    let down = true;
    const apply = async (b: HotBatch) => {
      if (down) throw new Error('redis away');
      applied.push(b);
    };
    const owed = createOwedWrites({ apply }, silentLogger, 3);
    const st = (id: string) => ({ status: { webhook_id: id, updated_at_ns: '1' } });
    owed.add({ statuses: [st('a')], retries: [{ id: 'a', dueAt: 0, data: '' }] }, new Error('x'));
    owed.add({ statuses: [st('b')] }, new Error('x'));
    await new Promise((r) => setTimeout(r, 700));
    expect(applied).toHaveLength(0);
    down = false;
    await new Promise((r) => setTimeout(r, 700));
    // Retries are never owed: they hold their batch until Redis has them.
    expect(applied.map((b) => [b.statuses?.[0]?.status.webhook_id, b.retries])).toEqual([['b', undefined]]);
    expect(owed.size()).toBe(0);
    await owed.stop();
  });

  it('a handoff lease written late is due a full lease from when it was written', async () => {
    const hot = new MemoryHotState(TTLS, systemClock);
    let now = 1_000;
    const lease = { id: 'wh_l', leaseDueAt: 1_000 + 5_000, leaseWritten: Promise.resolve() };
    now = 60_000; // Redis came back a minute later
    await writeLeases({ hot, clock: { now: () => now } }, [{ id: 'wh_l', dueAt: 6_000, data: 'x' }], [lease], 5_000);
    expect(lease.leaseDueAt).toBe(65_000);
    expect(await hot.claimDueRetries(64_999, 10, 1_000)).toHaveLength(0);
    expect(await hot.claimDueRetries(65_000, 10, 1_000)).toHaveLength(1);
  });
});

describe('a batch that may have been consumed before, while Redis is away', () => {
  it('is not attempted until the ended statuses can be read: a webhook its last owner delivered is not sent again', async () => {
    const config = loadConfig({ env: {}, overrides: { 'degraded.recheck_interval': 50, 'delivery.straggler_after': 60_000, 'delivery.batch_time_limit': 60_000 } });
    const topic = config.kafka.topics.pending;
    const hot = new MemoryHotState(TTLS, systemClock);
    let down = true;
    let lookups = 0;
    const ended: EndedLookup = {
      endedAttempts: async (ids) => {
        lookups++;
        if (down) throw new Error('redis away');
        const out = new Map<string, number>();
        for (const id of ids) {
          const s = await hot.getStatus(id);
          if (s && TERMINAL_STATES.has(s.state)) out.set(id, s.attempts);
        }
        return out;
      },
    };
    const hits: string[] = [];
    const sender: Sender = {
      send: async (req): Promise<DeliveryResponse> => {
        hits.push(req.headers['webhook-id']!);
        return { kind: 'response', status: 200, retryAfter: null, bodySnippet: 'ok', durationMs: 1 };
      },
      close: async () => {},
    };
    const w = hook('wh_seen', { config_id: 'cfg', attempt: 0, endpoint: 'https://k.example.com/hook' });
    // Its last owner delivered it and wrote its status, then was killed before its commit.
    await hot.apply({
      statuses: [
        {
          status: {
            webhook_id: w.id,
            config_id: 'cfg',
            endpoint: w.endpoint,
            endpoint_hash: w.endpoint_hash,
            max_attempts: 5,
            created_at: w.created_at,
            updated_at_ns: '1',
            state: 'delivered',
            attempts: 1,
          } as never,
        },
      ],
    });
    const batch: ConsumedBatch = { topic, partition: 0, maybeSeen: true, records: [{ topic, partition: 0, offset: '0', key: 'cfg', value: encodeWebhook(w), timestamp: 0 }] };
    const done = createDeliverer({ config, hot, producer: new MemoryLog(1).producer(), clock: systemClock, log: silentLogger, sender, ended })(batch);
    await new Promise((r) => setTimeout(r, 300));
    expect(lookups).toBeGreaterThan(1);
    expect(hits).toEqual([]);
    down = false;
    await done;
    expect(hits).toEqual([]);
  });
  it('is attempted at once when it starts past where its partition ended at assignment: nobody else had it, so the lookup is not waited for', async () => {
    const config = loadConfig({ env: {}, overrides: { 'degraded.recheck_interval': 50, 'delivery.straggler_after': 60_000, 'delivery.batch_time_limit': 60_000 } });
    const topic = config.kafka.topics.pending;
    let lookups = 0;
    const ended: EndedLookup = {
      endedAttempts: async () => {
        lookups++;
        throw new Error('connect ECONNREFUSED');
      },
    };
    const hits: string[] = [];
    const sender: Sender = {
      send: async (req): Promise<DeliveryResponse> => {
        hits.push(req.headers['webhook-id']!);
        return { kind: 'response', status: 200, retryAfter: null, bodySnippet: 'ok', durationMs: 1 };
      },
      close: async () => {},
    };
    const w = hook('wh_new', { config_id: 'cfg', attempt: 0, endpoint: 'https://k.example.com/hook' });
    const record = { topic, partition: 0, offset: '0', key: 'cfg', value: encodeWebhook(w), timestamp: 0 };
    const batch: ConsumedBatch = { topic, partition: 0, maybeSeen: true, afterAssignment: true, records: [record] };
    const hot = new MemoryHotState(TTLS, systemClock);
    await createDeliverer({ config, hot, producer: new MemoryLog(1).producer(), clock: systemClock, log: silentLogger, sender, ended })(batch);
    expect(hits).toEqual(['wh_new']);
    expect(lookups).toBe(1);
  });
  it('is not held per webhook by a status store that stopped answering after its lookup: once admission went local, the lookup is not asked again', async () => {
    const config = loadConfig({ env: {}, overrides: { 'delivery.straggler_after': 60_000, 'delivery.batch_time_limit': 60_000 } });
    const topic = config.kafka.topics.pending;
    // Redis answered the batch's lookup, then stopped: every later read fails, a stopped
    // Redis's way, after a reconnect attempt (here 200 ms); every guards call fails too.
    let lookups = 0;
    const ended: EndedLookup = {
      endedAttempts: async () => {
        if (lookups++ === 0) return new Map();
        await new Promise((r) => setTimeout(r, 200));
        throw new Error('redis: Reached the max retries per request limit');
      },
    };
    const guards = new Proxy({}, { get: () => async () => Promise.reject(new Error('redis away')) }) as Guards;
    // Each send takes 600 ms of the worker's clock: the lookup is old enough to be asked again.
    let skew = 0;
    const clock = { now: () => Date.now() + skew };
    const hits: string[] = [];
    const sender: Sender = {
      send: async (req): Promise<DeliveryResponse> => {
        hits.push(req.headers['webhook-id']!);
        skew += 600;
        return { kind: 'response', status: 200, retryAfter: null, bodySnippet: 'ok', durationMs: 1 };
      },
      close: async () => {},
    };
    const ids = ['wh_1', 'wh_2', 'wh_3', 'wh_4', 'wh_5'];
    const records = ids.map((id, i) => ({
      topic,
      partition: 0,
      offset: String(i),
      key: 'cfg',
      value: encodeWebhook(hook(id, { config_id: 'cfg', attempt: 0, endpoint: 'https://k.example.com/hook' })),
      timestamp: 0,
    }));
    const batch: ConsumedBatch = { topic, partition: 0, maybeSeen: true, records };
    const hot = new MemoryHotState(TTLS, systemClock);
    await createDeliverer({ config, hot, guards, producer: new MemoryLog(1).producer(), clock, log: silentLogger, sender, ended })(batch);
    expect(hits).toEqual(ids);
    // Before: each webhook after the first asked the stopped store again and waited for it to fail.
    expect(lookups).toBe(1);
  });
});
