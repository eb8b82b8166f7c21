import { createRequire } from 'node:module';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { webhookId } from '../../core/domain/ids';
import { originalProduceRequest, useFastRecordEncoding } from '../../workers/kafka/produce-encoding';

const require = createRequire(import.meta.url);
const Long = require('kafkajs/src/utils/long.js') as { fromInt: (n: number) => unknown; fromValue: (n: number) => unknown };
// What kafkajs's produce (any version from 3 to 7) calls: the patched builder once installed.
const produceRequest = () => require('kafkajs/src/protocol/requests/produce/v3/request.js') as typeof original;
const original = originalProduceRequest();

type Msg = { key?: string | Buffer | null; value?: string | Buffer | null; headers?: Record<string, string | Buffer>; timestamp?: string };

const rng = (() => {
  let s = 0x1234567;
  return () => ((s = (Math.imul(s, 1103515245) + 12345) | 0) >>> 0) / 2 ** 32;
})();
const text = (len: number) => Array.from({ length: len }, () => 'ab"\\é€😀{}:,0x'[Math.floor(rng() * 14)]).join('');
const bytes = async (build: typeof original, args: Parameters<typeof original>[0]) => (await build(args).encode()).buffer;

const args = (topicData: { topic: string; partitions: { partition: number; firstSequence?: number; messages: Msg[] }[] }[], extra: Record<string, unknown> = {}) =>
  ({ acks: -1, timeout: 30_000, compression: 0, topicData, ...extra }) as Parameters<typeof original>[0];

describe('produce request encoding (records written as kafkajs writes them)', () => {
  afterEach(() => vi.restoreAllMocks());
  useFastRecordEncoding();

  it('installs itself in place of kafkajs own record encoding', () => {
    expect(produceRequest()).not.toBe(original);
  });

  it('gives the bytes kafkajs gives, for results, tombstones, headers and every size of key and value', async () => {
    vi.spyOn(Date, 'now').mockReturnValue(1_764_600_000_123);
    const id = (i: number) => webhookId(1_764_600_000_000 + i);
    const result = (i: number) => JSON.stringify({ webhook_id: id(i), outcome: 'delivered', body: text(i * 7) });
    const many: Msg[] = Array.from({ length: 300 }, (_, i) => (i % 3 === 2 ? { key: id(i), value: null } : { key: id(i), value: result(i) }));
    const odd: Msg[] = [
      { key: null, value: 'x' },
      { value: '' },
      { key: '', value: Buffer.from([0, 1, 2, 255]) },
      { key: Buffer.from('bin'), value: text(20_000) },
      { key: 'h', value: 'v', headers: { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01', é: text(200), b: Buffer.from('raw') } },
      { key: 'e', value: 'v', headers: {} },
    ];
    const cases = [
      args([
        {
          topic: 'howk.results',
          partitions: [
            { partition: 0, messages: many.slice(0, 130) },
            { partition: 5, messages: many.slice(130) },
          ],
        },
        { topic: 'howk.state', partitions: [{ partition: 11, messages: odd }] },
      ]),
      args([{ topic: 't', partitions: [{ partition: 2, firstSequence: 7, messages: odd }] }], { transactionalId: 'tx-1', producerId: Long.fromValue(12345), producerEpoch: 3 }),
      args([{ topic: 'één', partitions: [{ partition: 1, messages: [{ key: 'k', value: 'v' }] }] }], { acks: 1, timeout: 5 }),
    ];
    for (const c of cases) expect((await bytes(produceRequest(), c)).equals(await bytes(original, c))).toBe(true);
  });

  it('leaves to kafkajs what it does not write itself (record timestamps, compression)', async () => {
    vi.spyOn(Date, 'now').mockReturnValue(1_764_600_000_123);
    const stamped = args([
      {
        topic: 't',
        partitions: [
          {
            partition: 0,
            messages: [
              { key: 'a', value: 'b', timestamp: '1764600000000' },
              { key: 'c', value: 'd', timestamp: '1764600000050' },
            ],
          },
        ],
      },
    ]);
    expect((await bytes(produceRequest(), stamped)).equals(await bytes(original, stamped))).toBe(true);
    const gz = args([{ topic: 't', partitions: [{ partition: 0, messages: [{ key: 'a', value: 'b'.repeat(100) }] }] }], { compression: 1 });
    expect((await bytes(produceRequest(), gz)).equals(await bytes(original, gz))).toBe(true);
  });
});
