import { createRequire } from 'node:module';
import { Partitioners, type PartitionMetadata } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { webhookId } from '../../core/domain/ids';
import { FastDefaultPartitioner, murmur2 } from '../../workers/kafka/partitioner';

const require = createRequire(import.meta.url);
// kafkajs's own murmur2 (the one its DefaultPartitioner uses): the reference.
const kafkajsMurmur2 = require('kafkajs/src/producer/partitioners/default/murmur2.js') as (key: string | Buffer) => number;

const meta = (n: number, leaderless: number[] = []): PartitionMetadata[] =>
  Array.from({ length: n }, (_, i) => ({ partitionId: i, leader: leaderless.includes(i) ? -1 : 0, partitionErrorCode: 0, replicas: [0], isr: [0] }));

// Deterministic pseudo-random keys: every length 0..80, ASCII, multi-byte UTF-8 and raw bytes.
const rng = (() => {
  let s = 0x2545f491;
  return () => ((s = (Math.imul(s, 1103515245) + 12345) | 0) >>> 0) / 2 ** 32;
})();
const text = (len: number, alphabet: string) => Array.from({ length: len }, () => alphabet[Math.floor(rng() * alphabet.length)]).join('');
const keys: (string | Buffer)[] = [
  '',
  'cfg_1',
  ...Array.from({ length: 500 }, (_, i) => webhookId(1_700_000_000_000 + i * 7919)),
  ...Array.from({ length: 81 }, (_, len) => text(len, 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-:.')),
  ...Array.from({ length: 60 }, (_, len) => text(len, 'aé€😀ÿ\u0080~')),
  ...Array.from({ length: 60 }, (_, len) => Buffer.from(Array.from({ length: len }, () => Math.floor(rng() * 256)))),
];

describe('Kafka partitioner (the partition of a keyed record)', () => {
  it('hashes every key exactly as kafkajs does', () => {
    for (const k of keys) expect(murmur2(k), String(k)).toBe(kafkajsMurmur2(k));
  });

  it('puts every keyed record on the partition kafkajs would, for any partition count', () => {
    const ours = FastDefaultPartitioner();
    const theirs = Partitioners.DefaultPartitioner();
    for (const n of [1, 2, 3, 6, 12, 50, 64]) {
      const partitionMetadata = meta(n, [1]);
      for (const key of keys) {
        const args = { topic: 't', partitionMetadata, message: { key, value: 'v' } };
        expect(ours(args), `${String(key)} over ${n}`).toBe(theirs(args));
      }
    }
  });

  it('keeps an explicit partition, and spreads records without a key over the partitions with a leader', () => {
    const p = FastDefaultPartitioner();
    const partitionMetadata = meta(4, [2]);
    expect(p({ topic: 't', partitionMetadata, message: { key: 'k', value: 'v', partition: 3 } })).toBe(3);
    const seen = new Set(Array.from({ length: 30 }, () => p({ topic: 't', partitionMetadata, message: { key: null, value: 'v' } })));
    expect([...seen].sort()).toEqual([0, 1, 3]);
  });
});
