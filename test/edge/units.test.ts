import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { LuaFactory } from 'wasmoon';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../core/config/load';
import { decodeWebhook } from '../../core/records/webhook';
import { MemoryHotState } from '../../core/memory/hot-state';
import { createEnqueuer } from '../../core/pipeline/enqueue';
import { silentLogger } from '../../core/ports/logger';
import { admissionOf, edgeConfigFrom } from '../../edge/config';
import { webhookBuilder } from '../../core/pipeline/enqueue';
import { MicroBatcher } from '../../edge/gate/batcher';
import { SIGNATURES, wrapperBytes } from '../../edge/lua/wrappers';
import type { KafkaRestRecord } from '../../core/ports/kafka-rest';
import { root } from './helpers/paths';

// The pure pieces of the edge, in Node.

describe('prebuilt addFunction wrappers (edge/lua/wrappers)', () => {
  it('are byte for byte what emscripten compiles at run time, and what is bundled', async () => {
    const em = (await new LuaFactory().getLuaModule()).module as unknown as { addFunction(fn: () => number, sig: string): number };
    const Native = WebAssembly.Module;
    const seen: Uint8Array[] = [];
    (WebAssembly as { Module: unknown }).Module = new Proxy(Native, {
      construct(target, args: [Uint8Array]) {
        seen.push(new Uint8Array(args[0]));
        return Reflect.construct(target, args);
      },
    });
    try {
      for (const sig of SIGNATURES) em.addFunction(() => 0, sig);
    } finally {
      (WebAssembly as { Module: unknown }).Module = Native;
    }
    expect(seen).toHaveLength(SIGNATURES.length);
    SIGNATURES.forEach((sig, i) => {
      expect(wrapperBytes(sig)).toEqual(seen[i]);
      expect(new Uint8Array(readFileSync(join(root, 'edge', 'lua', 'wrappers', `${sig}.wasm`)))).toEqual(seen[i]);
    });
  });
});

describe('MicroBatcher', () => {
  const rec = (n: number): KafkaRestRecord => ({ topic: 't', key: 'k', value: String(n) });
  const setup = (fail = false) => {
    const calls: KafkaRestRecord[][] = [];
    let armed = 0;
    const b = new MicroBatcher({
      maxRecords: 5,
      arm: () => armed++,
      produce: async (records) => {
        calls.push(records);
        if (fail) throw new Error('down');
        return records.map((_, i) => ({ topic: 't', partition: 0, offset: calls.length * 100 + i, timestamp: 0 }));
      },
    });
    return { b, calls, armed: () => armed };
  };

  it('flushes on size, keeps a request whole, and hands each request its own acks', async () => {
    const { b, calls, armed } = setup();
    const a = b.add([rec(1), rec(2)]);
    const c = b.add([rec(3), rec(4), rec(5), rec(6)]);
    expect(armed()).toBe(1);
    expect(calls).toHaveLength(1);
    expect(calls[0]!.map((r) => r.value)).toEqual(['1', '2', '3', '4', '5', '6']);
    expect((await a).acks.map((x) => x.offset)).toEqual([100, 101]);
    expect((await c).acks.map((x) => x.offset)).toEqual([102, 103, 104, 105]);
    const d = b.add([rec(7)]);
    expect(b.buffered).toBe(1);
    b.flush();
    expect((await d).acks.map((x) => x.offset)).toEqual([200]);
  });

  it('sends at once while fewer than maxInFlight produces are on the wire, then gathers until one returns', async () => {
    const calls: KafkaRestRecord[][] = [];
    const pending: (() => void)[] = [];
    let armed = 0;
    const b = new MicroBatcher({
      maxRecords: 100,
      maxInFlight: 1,
      arm: () => armed++,
      produce: (records) => {
        calls.push(records);
        return new Promise((resolve) => pending.push(() => resolve(records.map(() => ({ topic: 't', partition: 0, offset: 0, timestamp: 0 })))));
      },
    });
    const first = b.add([rec(1)]);
    await Promise.resolve();
    // A lone request goes without waiting for the linger.
    expect(calls).toHaveLength(1);
    expect(armed).toBe(0);
    const later = [b.add([rec(2)]), b.add([rec(3)])];
    await Promise.resolve();
    expect(calls).toHaveLength(1);
    expect(armed).toBe(2);
    pending.shift()!();
    await first;
    // The produce returned: what gathered meanwhile goes in one.
    expect(calls.map((c) => c.map((r) => r.value))).toEqual([['1'], ['2', '3']]);
    pending.shift()!();
    await Promise.all(later);
  });

  it('fails every request of a failed flush, and nothing else', async () => {
    const { b } = setup(true);
    const a = b.add([rec(1)]);
    const c = b.add([rec(2)]);
    b.flush();
    await expect(a).rejects.toThrow('down');
    await expect(c).rejects.toThrow('down');
    expect(b.buffered).toBe(0);
  });
});

describe('edge config', () => {
  const base = { HOWK_KAFKA_REST_URL: 'http://b/kafka', HOWK_KAFKA_REST_PASSWORD: 'p' };
  it('reads the shared HOWK_* config and the edge settings from Worker vars', () => {
    const { config, edge } = edgeConfigFrom({
      ...base,
      HOWK_KAFKA_TOPICS_PENDING: 'x.pending',
      HOWK_EDGE_BATCH_LINGER: '7ms',
      HOWK_EDGE_DOMAIN_RATES: '{"api.stripe.com":{"rate":500,"burst":900}}',
      GATE: {},
    });
    expect(config.kafka.topics.pending).toBe('x.pending');
    expect(edge.batch_linger).toBe(7);
    expect(admissionOf(edge, 'api.stripe.com')).toEqual({ rate: 500, burst: 900 });
    expect(admissionOf(edge, 'other.example')).toEqual({ rate: 100, burst: 200 });
  });
  it('refuses to start without the Kafka REST endpoint and its password, or with a bad setting', () => {
    expect(() => edgeConfigFrom({})).toThrow(/HOWK_KAFKA_REST_URL/);
    expect(() => edgeConfigFrom({ HOWK_KAFKA_REST_URL: 'http://b' })).toThrow(/HOWK_KAFKA_REST_PASSWORD/);
    expect(() => edgeConfigFrom({ ...base, HOWK_EDGE_BATCH_MAX_RECORDS: '0' })).toThrow(/HOWK_EDGE_BATCH_MAX_RECORDS/);
  });
});

describe('edge webhook records', () => {
  it('are built exactly as howk-api builds them', async () => {
    const config = loadConfig({ env: {} });
    const now = Date.UTC(2026, 0, 2, 3, 4, 5);
    const clock = { now: () => now };
    const sent: string[] = [];
    const enqueue = createEnqueuer({
      config,
      clock,
      log: silentLogger,
      hot: new MemoryHotState({ status_ttl: 1000, stats_ttl: 1000, retry_data_ttl: 1000 }, clock),
      producer: { send: async (rs) => void sent.push(...rs.map((r) => r.value!)), close: async () => {} },
    });
    const item = { endpoint: 'https://example.com/h', payload: '{"a": 1.0}', headers: { 'x-a': 'b' }, idempotency_key: 'k', max_attempts: 3 };
    await enqueue('cfg', [item]);
    const core = decodeWebhook(sent[0]!);
    const edge = await webhookBuilder(config, undefined)('cfg', item, now);
    expect({ ...edge, id: core.id }).toEqual(core);
  });
});
