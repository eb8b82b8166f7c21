import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../core/config/load';
import { encodeWebhook } from '../../core/records/webhook';
import { MemoryGuards } from '../../core/memory/guards';
import { MemoryHotState } from '../../core/memory/hot-state';
import { MemoryLog } from '../../core/memory/log';
import { createDeliverer } from '../../core/pipeline/deliver';
import { systemClock } from '../../core/ports/clock';
import type { ConsumedBatch } from '../../core/ports/log';
import { silentLogger } from '../../core/ports/logger';
import type { DeliveryResponse, Sender } from '../../core/ports/sender';
import { hook } from '../helpers/reconcile-fixtures';
import { memoryEndedStore } from '../helpers/memory-ended';

// A partition moved between two live workers while the old owner had a delivery on the wire:
// the new owner consumes the same record (its batch may have been seen) before that delivery
// is answered, so neither a status nor a sent mark says anything yet. Its admission finds the
// old owner's in-flight lease in force and answers 'elsewhere': the copy waits for that lease
// to go, looks the pass up again, and is not sent beside the first.

const TTLS = { status_ttl: 86_400_000, stats_ttl: 86_400_000, retry_data_ttl: 86_400_000 };
const config = loadConfig({ env: {}, overrides: { 'delivery.straggler_after': 60_000, 'delivery.batch_time_limit': 60_000, 'retry.base_delay': 60_000 } });
const topic = config.kafka.topics.pending;
const OK: DeliveryResponse = { kind: 'response', status: 200, retryAfter: null, bodySnippet: 'ok', durationMs: 1 };

const batchOf = (ids: string[], maybeSeen: boolean): ConsumedBatch => ({
  topic,
  partition: 0,
  maybeSeen,
  records: ids.map((id, i) => ({
    topic,
    partition: 0,
    offset: String(i),
    key: 'cfg_e',
    value: encodeWebhook(hook(id, { config_id: 'cfg_e', attempt: 0, endpoint: 'https://e.example.com/hook' })),
    timestamp: 0,
  })),
});

/** Two workers on one guards store and one status store; the endpoint answers the first send of each id in `held` only when told to. */
const twoWorkers = (first: DeliveryResponse, held: readonly string[] = ['wh_e1']) => {
  const hot = new MemoryHotState(TTLS, systemClock);
  const { ended } = memoryEndedStore(hot);
  const guards = new MemoryGuards();
  const hits: string[] = [];
  const gates = new Map(
    held.map((id) => {
      let open!: () => void;
      return [id, { answered: new Promise<void>((r) => (open = r)), open }] as const;
    }),
  );
  const sender: Sender = {
    send: async (req): Promise<DeliveryResponse> => {
      const id = req.headers['webhook-id']!;
      hits.push(id);
      const gate = gates.get(id);
      if (gate && hits.filter((h) => h === id).length === 1) {
        await gate.answered;
        return id === 'wh_e1' ? first : OK;
      }
      return OK;
    },
    close: async () => {},
  };
  const worker = () => createDeliverer({ config, hot, producer: new MemoryLog(1).producer(), clock: systemClock, log: silentLogger, sender, ended, guards });
  return { hot, hits, answer: (id = 'wh_e1') => gates.get(id)!.open(), a: worker(), b: worker() };
};

const until = async (cond: () => boolean) => {
  for (let i = 0; i < 400 && !cond(); i++) await new Promise((r) => setTimeout(r, 5));
  expect(cond()).toBe(true);
};

describe("a copy of a delivery still on the old owner's wire", () => {
  it('is not sent beside it: once answered 2xx there, the copy is written delivered from the mark', async () => {
    const w = twoWorkers(OK);
    const first = w.a(batchOf(['wh_e1'], false));
    await until(() => w.hits.length === 1);
    // The partition moves: the new owner consumes the record while the first send is out.
    const copy = w.b(batchOf(['wh_e1', 'wh_e2'], true));
    await new Promise((r) => setTimeout(r, 300));
    expect(w.hits).toEqual(['wh_e1']); // held: neither sent again nor let wh_e2 past it (per-config order)
    w.answer();
    await Promise.all([first, copy]);
    expect(w.hits).toEqual(['wh_e1', 'wh_e2']);
    expect(await w.hot.getStatus('wh_e1')).toMatchObject({ state: 'delivered', attempts: 1 });
    await Promise.all([w.a.drain(), w.b.drain()]);
  });

  it('is attempted once the first ends without a 2xx (its worker decides the retry; nothing is lost)', async () => {
    const w = twoWorkers({ kind: 'response', status: 500, retryAfter: null, bodySnippet: 'no', durationMs: 1 });
    const first = w.a(batchOf(['wh_e1'], false));
    await until(() => w.hits.length === 1);
    const copy = w.b(batchOf(['wh_e1'], true));
    await new Promise((r) => setTimeout(r, 200));
    expect(w.hits).toEqual(['wh_e1']);
    w.answer();
    await Promise.all([first, copy]);
    // No 2xx to find: the copy is sent, after the first was answered.
    expect(w.hits).toEqual(['wh_e1', 'wh_e1']);
    await Promise.all([w.a.drain(), w.b.drain()]);
  });

  it("is not sent when the first is answered between the copy's lookup and its admission: looked up again once admitted", async () => {
    const w = twoWorkers(OK, ['wh_e0', 'wh_e1']);
    const first = w.a(batchOf(['wh_e1'], false));
    await until(() => w.hits.length === 1);
    // The new owner's batch looks both up now (nothing known), then waits on wh_e0 ahead of wh_e1.
    const copy = w.b(batchOf(['wh_e0', 'wh_e1'], true));
    await until(() => w.hits.includes('wh_e0'));
    w.answer('wh_e1'); // answered on the old owner: its lease ends, its sent mark is written
    await first;
    w.answer('wh_e0'); // well within the batch lookup's re-check age: the copy's admission finds no lease
    await copy;
    expect(w.hits.filter((h) => h === 'wh_e1')).toEqual(['wh_e1']);
    expect(await w.hot.getStatus('wh_e1')).toMatchObject({ state: 'delivered', attempts: 1 });
    await Promise.all([w.a.drain(), w.b.drain()]);
  });
});
