import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KafkaLog } from '../../workers/kafka/log';
import { requireEnv, uniq, waitFor } from '../helpers/env';

// Real Kafka. Two consumers of one group (two workers) lose every connection to the broker
// for 4 s: the network between them and the broker is cut (net.connect is gated in this test
// process; the shared broker itself stays up). kafkajs gives up on the broker after about a
// second and restarts each consumer. Once the network is back, records produced then must
// reach the consumers within 5 s. Before, a restarted consumer joined as a new member and
// the group waited kafka.rebalance_timeout (10 s) for the two members it still listed, which
// never came back: nothing was consumed for ~10 s. The same wait delayed the first delivery
// after a broker restart (test/chaos, Kafka down; docs/RELIABILITY.md).

type Connect = typeof net.connect;
const realConnect: Connect = net.connect;
let cut = false;
const open = new Set<net.Socket>();

/** While cut, new connections are refused (a closed port) and the open ones are reset. */
const gate = ((...args: Parameters<Connect>) => {
  const [opts, ...rest] = args as unknown as [net.NetConnectOpts, ...unknown[]];
  const target = cut ? { ...opts, host: '127.0.0.1', port: 1 } : opts;
  const s = (realConnect as (...a: unknown[]) => net.Socket)(target, ...rest);
  open.add(s);
  s.on('close', () => open.delete(s));
  return s;
}) as Connect;

describe('consumers cut off from the broker for a few seconds', () => {
  beforeAll(() => {
    requireEnv('KAFKA_BROKERS');
    net.connect = gate;
  });
  afterAll(() => {
    net.connect = realConnect;
  });

  it('consume again within 5 s of the network coming back (no wait for the members they were before)', async () => {
    const brokers = requireEnv('KAFKA_BROKERS').split(',');
    const topic = uniq('reconnect');
    const group = `${topic}-g`;
    const crashes: string[] = [];
    const log = (id: string) =>
      new KafkaLog({
        brokers,
        clientId: uniq(id),
        produceTimeoutMs: 5000,
        maxWaitMs: 50,
        maxBytesPerPartition: 1 << 20,
        sessionTimeoutMs: 30_000,
        rebalanceTimeoutMs: 10_000,
        onError: (op) => op === 'consumer_crash' && crashes.push(id),
      });
    const [a, b, source] = [log('a'), log('b'), log('source')];
    try {
      await source.admin.ensureTopics([{ name: topic, partitions: 4 }]);
      const got = new Set<string>();
      for (const l of [a, b])
        await l.consumer({ groupId: group, topics: [topic], fromBeginning: true }).run(async (batch) => void batch.records.forEach((r) => got.add(r.value ?? '')));
      const p = source.producer();
      const send = (tag: string) => p.send(Array.from({ length: 8 }, (_, i) => ({ topic, key: `k${i}`, value: `${tag}-${i}` })));
      const all = (tag: string) => Array.from({ length: 8 }, (_, i) => `${tag}-${i}`).every((v) => got.has(v));
      await send('before');
      await waitFor(() => all('before'), { timeoutMs: 60_000, what: 'the records sent before the cut' });

      cut = true;
      for (const s of open) s.destroy(Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }));
      await new Promise((r) => setTimeout(r, 4000));
      expect(crashes.length, 'kafkajs restarted the consumers').toBeGreaterThan(0);
      cut = false;

      const backAt = Date.now();
      // The producer may still be giving up on its cut connection: send again until it lands.
      await waitFor(
        () =>
          send('after').then(
            () => true,
            () => false,
          ),
        { timeoutMs: 20_000, what: 'a produce after the cut' },
      );
      await waitFor(() => all('after'), { timeoutMs: 30_000, intervalMs: 50, what: 'the records sent after the cut' });
      expect(Date.now() - backAt).toBeLessThanOrEqual(5000);
      await p.close();
    } finally {
      cut = false;
      await Promise.all([a.close(), b.close(), source.close()]);
    }
  });
});
