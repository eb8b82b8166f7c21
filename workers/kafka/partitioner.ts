import { Buffer } from 'node:buffer';
import { Partitioners, type ICustomPartitioner } from 'kafkajs';

// kafkajs's DefaultPartitioner hashes each key with a murmur2 written over its BigInt Long
// type: a dozen Long objects per 4 bytes of key, about 3% of a worker's CPU (every result
// and state record is keyed by its webhook id). The same murmur2 (Kafka's Java client's) in
// 32-bit integer arithmetic gives the same hash, so the same partition for every key.

const M = 0x5bd1e995;
const SEED = 0x9747b28c;

const utf8 = new TextEncoder();

/** Kafka's murmur2 of the UTF-8 bytes of `key` (or of the bytes themselves), as a signed 32-bit int. */
export const murmur2 = (key: string | Uint8Array): number => {
  const data = typeof key === 'string' ? asciiOrUtf8(key) : key;
  const length = data.length;
  let h = (SEED ^ length) | 0;
  const length4 = length >>> 2;
  for (let i = 0; i < length4; i++) {
    const i4 = i << 2;
    let k = data[i4]! | (data[i4 + 1]! << 8) | (data[i4 + 2]! << 16) | (data[i4 + 3]! << 24);
    k = Math.imul(k, M);
    k ^= k >>> 24;
    k = Math.imul(k, M);
    h = Math.imul(h, M) ^ k;
  }
  const tail = length & ~3;
  switch (length & 3) {
    case 3:
      h ^= data[tail + 2]! << 16;
    // falls through
    case 2:
      h ^= data[tail + 1]! << 8;
    // falls through
    case 1:
      h ^= data[tail]!;
      h = Math.imul(h, M);
  }
  h ^= h >>> 13;
  h = Math.imul(h, M);
  h ^= h >>> 15;
  return h | 0;
};

// Keys are webhook and config ids (ASCII): their bytes are their char codes, without an encoder call.
let scratch = new Uint8Array(64);
const asciiOrUtf8 = (s: string): Uint8Array => {
  const n = s.length;
  if (n > scratch.length) scratch = new Uint8Array(Math.max(n, scratch.length * 2));
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i);
    if (c > 0x7f) return utf8.encode(s);
    scratch[i] = c;
  }
  return scratch.subarray(0, n);
};

type PartitionArgs = Parameters<ReturnType<ICustomPartitioner>>[0];

/**
 * kafkajs's DefaultPartitioner, with the key hash above: an explicit partition wins, a key
 * picks `murmur2(key) & 0x7fffffff % partitions`, and a record without a key goes to
 * kafkajs's own round robin over the partitions with a leader.
 */
export const FastDefaultPartitioner: ICustomPartitioner = () => {
  const unkeyed = Partitioners.DefaultPartitioner();
  return (args: PartitionArgs) => {
    const { message } = args;
    if (message.partition !== null && message.partition !== undefined) return message.partition;
    const key = message.key;
    if (key === null || key === undefined) return unkeyed(args);
    // As kafkajs: a Buffer's bytes, anything else as the UTF-8 of its string.
    const bytes = Buffer.isBuffer(key) ? key : String(key);
    return (murmur2(bytes) & 0x7fffffff) % args.partitionMetadata.length;
  };
};
