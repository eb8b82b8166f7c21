import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../core/config/load';
import { encodeWebhook } from '../../core/records/webhook';
import { MemoryHotState } from '../../core/memory/hot-state';
import { MemoryLog } from '../../core/memory/log';
import { createDeliverer } from '../../core/pipeline/deliver';
import { createRecentOutcomes } from '../../core/pipeline/recent-outcomes';
import { systemClock } from '../../core/ports/clock';
import type { EndedLookup } from '../../core/ports/hot-state';
import type { ConsumedBatch, LogProducer } from '../../core/ports/log';
import { silentLogger } from '../../core/ports/logger';
import type { DeliveryResponse, Sender } from '../../core/ports/sender';
import { hook } from '../helpers/reconcile-fixtures';
import { endedAttemptsOf } from '../helpers/memory-ended';

// A record consumed again (a rewind, a consumer restarted after a broker outage, a partition
// whose last owner was killed before its commit) is not sent again when its attempt is known:
// made by this worker (RecentOutcomes), or ended in the status store (looked up for the first
// records of a partition just assigned). docs/RELIABILITY.md, *Duplicates*.

const TTLS = { status_ttl: 86_400_000, stats_ttl: 86_400_000, retry_data_ttl: 86_400_000 };
const configOf = (overrides: Record<string, unknown> = {}) =>
  loadConfig({ env: {}, overrides: { 'delivery.straggler_after': 60_000, 'delivery.batch_time_limit': 60_000, ...overrides } });
const config = configOf();
const topic = config.kafka.topics.pending;

const batchOf = (ids: string[], extra: Partial<ConsumedBatch> = {}): ConsumedBatch => ({
  topic,
  partition: 0,
  records: ids.map((id, i) => ({
    topic,
    partition: 0,
    offset: String(i),
    key: 'cfg_k',
    value: encodeWebhook(hook(id, { config_id: 'cfg_k', attempt: 0, endpoint: 'https://k.example.com/hook' })),
    timestamp: 0,
  })),
  ...extra,
});

/** 200 to everything; counts the requests per webhook id. */
const countingSender = () => {
  const hits = new Map<string, number>();
  const sender: Sender = {
    send: async (req): Promise<DeliveryResponse> => {
      const id = req.headers['webhook-id']!;
      hits.set(id, (hits.get(id) ?? 0) + 1);
      return { kind: 'response', status: 200, retryAfter: null, bodySnippet: 'ok', durationMs: 1 };
    },
    close: async () => {},
  };
  return { sender, hits };
};

/** A producer that refuses every send while `down` (the broker away). */
const switchable = (inner: LogProducer) => {
  const state = { down: false, failures: 0 };
  const producer: LogProducer = {
    send: (records) => {
      if (!state.down) return inner.send(records);
      state.failures++;
      return Promise.reject(new Error('broker unreachable'));
    },
    close: () => inner.close(),
  };
  return { producer, state };
};

/** EndedLookup over the memory hot state's statuses (the Redis one reads the same fields). */
const endedOf = (hot: MemoryHotState): EndedLookup => ({ endedAttempts: endedAttemptsOf(hot) });

const IDS = ['wh_k1', 'wh_k2', 'wh_k3'];

describe('a record consumed again whose attempt is known', () => {
  it('is not sent again after its outcome was written (a rewound partition): each webhook reaches the endpoint once', async () => {
    const log = new MemoryLog(1);
    const { sender, hits } = countingSender();
    const deliver = createDeliverer({ config, hot: new MemoryHotState(TTLS, systemClock), producer: log.producer(), clock: systemClock, log: silentLogger, sender });
    await deliver(batchOf(IDS));
    await deliver(batchOf(IDS));
    expect(Object.fromEntries(hits)).toEqual({ wh_k1: 1, wh_k2: 1, wh_k3: 1 });
    // Its outcome is written once: the copy writes nothing.
    expect(log.records(config.kafka.topics.results).map((r) => r.key)).toEqual(IDS);
  });

  it('consumed again while its outcome write is failing (a consumer restarted during a broker outage): not sent again, and resolves only once the outcome is durable', async () => {
    const log = new MemoryLog(1);
    const { producer, state } = switchable(log.producer());
    const { sender, hits } = countingSender();
    const deliver = createDeliverer({ config, hot: new MemoryHotState(TTLS, systemClock), producer, clock: systemClock, log: silentLogger, sender });
    state.down = true;
    let firstDone = false;
    let againDone = false;
    const first = deliver(batchOf(IDS)).then(() => (firstDone = true));
    await new Promise((r) => setTimeout(r, 100));
    expect(state.failures).toBeGreaterThan(0);
    const again = deliver(batchOf(IDS)).then(() => (againDone = true));
    await new Promise((r) => setTimeout(r, 300));
    // The copy waits for the first pass's outcome: committing it earlier could lose it.
    expect([firstDone, againDone]).toEqual([false, false]);
    state.down = false;
    await Promise.all([first, again]);
    expect(Object.fromEntries(hits)).toEqual({ wh_k1: 1, wh_k2: 1, wh_k3: 1 });
    expect(log.records(config.kafka.topics.results)).toHaveLength(3);
  });

  it('is not sent again by a new owner when the status store has it ended (a worker killed before its commit), in a batch that may have been seen', async () => {
    const log = new MemoryLog(1);
    const hot = new MemoryHotState(TTLS, systemClock);
    const { sender, hits } = countingSender();
    const killed = createDeliverer({ config, hot, producer: log.producer(), clock: systemClock, log: silentLogger, sender });
    await killed(batchOf(IDS.slice(0, 2)));
    // The partition's next owner: another process, nothing in its memory.
    const next = createDeliverer({ config, hot, producer: log.producer(), clock: systemClock, log: silentLogger, sender, ended: endedOf(hot) });
    await next(batchOf(IDS, { maybeSeen: true }));
    expect(Object.fromEntries(hits)).toEqual({ wh_k1: 1, wh_k2: 1, wh_k3: 1 });
    expect((await hot.getStatus('wh_k3'))?.state).toBe('delivered');
  });

  it('is sent again when the batch is not marked as maybe seen (no lookup past the first records of a partition)', async () => {
    const log = new MemoryLog(1);
    const hot = new MemoryHotState(TTLS, systemClock);
    const { sender, hits } = countingSender();
    await createDeliverer({ config, hot, producer: log.producer(), clock: systemClock, log: silentLogger, sender })(batchOf(IDS));
    await createDeliverer({ config, hot, producer: log.producer(), clock: systemClock, log: silentLogger, sender, ended: endedOf(hot) })(batchOf(IDS));
    expect(Object.fromEntries(hits)).toEqual({ wh_k1: 2, wh_k2: 2, wh_k3: 2 });
  });

  it('is sent again with delivery.recent_outcomes 0 (nothing remembered)', async () => {
    const { sender, hits } = countingSender();
    const deliver = createDeliverer({
      config: configOf({ 'delivery.recent_outcomes': 0 }),
      hot: new MemoryHotState(TTLS, systemClock),
      producer: new MemoryLog(1).producer(),
      clock: systemClock,
      log: silentLogger,
      sender,
    });
    await deliver(batchOf(IDS));
    await deliver(batchOf(IDS));
    expect(Object.fromEntries(hits)).toEqual({ wh_k1: 2, wh_k2: 2, wh_k3: 2 });
  });
});

describe('a known pass in a batch with stragglers', () => {
  it('is not handed off under a lease: the retry its first pass scheduled stays scheduled (a lease would replace it and the copy would ack it away)', async () => {
    const cfg = configOf({ 'delivery.straggler_after': 50, 'delivery.batch_time_limit': 50, 'kafka.per_key_parallelism': 1 });
    const hot = new MemoryHotState(TTLS, systemClock);
    const sent: string[] = [];
    const sender: Sender = {
      send: async (req): Promise<DeliveryResponse> => {
        const id = req.headers['webhook-id']!;
        sent.push(id);
        // The slow one makes its lane a straggler; wh_k1 fails (a retry is scheduled).
        if (id === 'wh_slow') await new Promise((r) => setTimeout(r, 300));
        return { kind: 'response', status: id === 'wh_k1' ? 503 : 200, retryAfter: null, bodySnippet: '', durationMs: 1 };
      },
      close: async () => {},
    };
    const deliver = createDeliverer({ config: cfg, hot, producer: new MemoryLog(1).producer(), clock: systemClock, log: silentLogger, sender });
    await deliver(batchOf(['wh_k1']));
    const scheduled = async () => (await hot.claimDueRetries(Date.now() + 3_600_000, 10, 1)).map((e) => [e.id, JSON.parse(e.data).attempt]);
    // Claimed with a 1 ms lease: the entries stay, due again at once.
    expect(await scheduled()).toEqual([['wh_k1', 1]]);
    await new Promise((r) => setTimeout(r, 5));
    await deliver(batchOf(['wh_slow', 'wh_k1']));
    await deliver.drain();
    expect(sent).toEqual(['wh_k1', 'wh_slow']);
    expect(await scheduled()).toEqual([['wh_k1', 1]]);
  });
});

describe('a copy of a pass that an earlier batch still runs in the background', () => {
  it('commits only once that pass is durable: skipped while the first copy runs, it would lose the webhook if the worker died before that outcome', async () => {
    const cfg = configOf({ 'delivery.straggler_after': 50, 'delivery.batch_time_limit': 50, 'kafka.per_key_parallelism': 1 });
    const hot = new MemoryHotState(TTLS, systemClock);
    const { sender: fast, hits } = countingSender();
    // wh_slow's endpoint takes 500 ms: its lane is handed off under a lease.
    const sender: Sender = { ...fast, send: async (req) => (await new Promise((r) => setTimeout(r, 500)), fast.send(req)) };
    const deliver = createDeliverer({ config: cfg, hot, producer: new MemoryLog(1).producer(), clock: systemClock, log: silentLogger, sender });
    await deliver(batchOf(['wh_slow']));
    // A second copy of the same pass (the scheduler re-enqueued it: its lease ran out under a
    // stalled worker) arrives while the first is still being sent.
    await deliver(batchOf(['wh_slow']));
    // Its batch resolved (may commit): the first copy's outcome must be durable by then.
    expect((await hot.getStatus('wh_slow'))?.state).toBe('delivered');
    await deliver.drain();
    expect(Object.fromEntries(hits)).toEqual({ wh_slow: 1 });
  });
});

describe("two copies of a pass its last owner ended, in a new owner's first batch with stragglers", () => {
  it('commit without a rewind: the later copy, held for the earlier one, is known by the same lookup that skipped it', async () => {
    const cfg = configOf({ 'delivery.straggler_after': 50, 'delivery.batch_time_limit': 50, 'kafka.per_key_parallelism': 1 });
    const hot = new MemoryHotState(TTLS, systemClock);
    const { sender: fast, hits } = countingSender();
    // wh_slow makes the lane a straggler before it reaches the two copies of wh_done.
    const sender: Sender = { ...fast, send: async (req) => (req.headers['webhook-id'] === 'wh_slow' && (await new Promise((r) => setTimeout(r, 300))), fast.send(req)) };
    // The last owner delivered wh_done's first pass (1 attempt, ended) and was killed before its commit.
    const ended: EndedLookup = { endedAttempts: async (ids) => new Map(ids.filter((id) => id === 'wh_done').map((id) => [id, 1])) };
    const deliver = createDeliverer({ config: cfg, hot, producer: new MemoryLog(1).producer(), clock: systemClock, log: silentLogger, sender, ended });
    // Rejected, the batch would send the partition back to its first offset: every record read again.
    await expect(deliver(batchOf(['wh_slow', 'wh_done', 'wh_done'], { maybeSeen: true }))).resolves.toBeUndefined();
    await deliver.drain();
    expect(Object.fromEntries(hits)).toEqual({ wh_slow: 1 });
  });
});

describe('RecentOutcomes', () => {
  const w = (id: string, attempt = 0) => hook(id, { attempt });

  it('keeps at most max entries, the oldest going first', () => {
    const r = createRecentOutcomes(2);
    for (const id of ['a', 'b', 'c']) r.made(w(id));
    expect(r.size()).toBe(2);
    expect(r.known(w('a'))).toBeUndefined();
    expect(r.known(w('c'))).toBeInstanceOf(Promise);
  });

  it('tells passes apart: another attempt of the same webhook is not known', () => {
    const r = createRecentOutcomes(10);
    r.made(w('a', 0));
    r.settle([w('a', 0)]);
    expect(r.known(w('a', 0))).toBe(true);
    expect(r.known(w('a', 1))).toBeUndefined();
  });

  it('a copy waiting on a pass evicted before its outcome was written learns so (it sends the pass again rather than wait for ever)', async () => {
    const r = createRecentOutcomes(1);
    r.made(w('a'));
    const waiting = r.known(w('a')) as Promise<void>;
    r.made(w('b'));
    await expect(waiting).rejects.toThrow('forgotten');
  });

  it('forgets a pass whose outcome will not be written, and the copy waiting on it learns so', async () => {
    const r = createRecentOutcomes(10);
    r.made(w('a'));
    const waiting = r.known(w('a')) as Promise<void>;
    r.settle([w('a')], new Error('stopping'));
    await expect(waiting).rejects.toThrow('stopping');
    expect(r.known(w('a'))).toBeUndefined();
  });
});
