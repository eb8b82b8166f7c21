import { Buffer } from 'node:buffer';
import { createRequire } from 'node:module';
import { crc32c } from './crc32c';

// kafkajs 2.2.4 encodes each record of a produce request through an Encoder of its own: a
// Buffer per varint, BigInt arithmetic for the timestamp delta, an object spread per record,
// and the record's bytes copied into the batch after. That was about 5% of a worker's CPU
// (two records per delivered webhook) and as much of howk-api's. The encoding below writes
// the records of a partition straight into one buffer, and gives the same bytes: kafkajs's own
// Encoder still writes the request, topic and batch headers (the checksum: workers/kafka/crc32c.ts).
// Only the common shape takes this path (no compression, no record timestamps, string or
// Buffer keys, values and header values); anything else is encoded by kafkajs as before.
// Produce v4 to v7 reuse v3's encoder, so one patch covers the versions a broker may pick.

const require = createRequire(import.meta.url);

type Bytes = string | Buffer | null | undefined;
type Message = { key?: Bytes; value?: Bytes; headers?: Record<string, unknown>; timestamp?: unknown; partition?: unknown };
type PartitionData = { partition: number; firstSequence?: number; messages: Message[] };
type TopicData = { topic: string; partitions: PartitionData[] };
type RequestArgs = { acks: number; timeout: number; transactionalId?: string | null; producerId?: unknown; producerEpoch?: number; compression?: number; topicData: TopicData[] };
type KafkaEncoder = {
  buf: Buffer;
  offset: number;
  readonly buffer: Buffer;
  size(): number;
  writeInt8(v: number): KafkaEncoder;
  writeInt16(v: number): KafkaEncoder;
  writeInt32(v: number): KafkaEncoder;
  writeUInt32(v: number): KafkaEncoder;
  writeInt64(v: unknown): KafkaEncoder;
  writeString(v: string | null): KafkaEncoder;
  writeBytes(v: Buffer): KafkaEncoder;
  writeEncoder(e: KafkaEncoder): KafkaEncoder;
  writeBufferInternal(b: Buffer): void;
};
type Request = { encode: () => Promise<KafkaEncoder> };
type RequestFn = ((args: RequestArgs) => Request) & { __howkFastRecords?: true; __howkOriginal?: RequestFn };

const V3_REQUEST = 'kafkajs/src/protocol/requests/produce/v3/request.js';

/** Length of `v` zigzag-encoded as a varint (Kafka's record fields: signed 32-bit). */
const varIntSize = (v: number): number => {
  let u = ((v << 1) ^ (v >> 31)) >>> 0;
  let n = 1;
  while (u > 0x7f) {
    n++;
    u >>>= 7;
  }
  return n;
};

const writeVarInt = (buf: Buffer, at: number, v: number): number => {
  let u = ((v << 1) ^ (v >> 31)) >>> 0;
  while (u > 0x7f) {
    buf[at++] = (u & 0x7f) | 0x80;
    u >>>= 7;
  }
  buf[at++] = u;
  return at;
};

const byteLength = (b: string | Buffer): number => (typeof b === 'string' ? Buffer.byteLength(b, 'utf8') : b.length);

const isBytes = (b: unknown): b is Bytes => b === null || b === undefined || typeof b === 'string' || Buffer.isBuffer(b);

/** Whether every message has the shape the fast encoding writes exactly as kafkajs does. */
const plain = (messages: Message[]): boolean => {
  for (const m of messages) {
    if (m.timestamp !== null && m.timestamp !== undefined) return false;
    if (!isBytes(m.key) || !isBytes(m.value)) return false;
    const h = m.headers;
    if (h === undefined) continue;
    if (h === null || typeof h !== 'object' || Array.isArray(h)) return false;
    for (const k of Object.keys(h)) {
      const v = h[k];
      if (typeof v !== 'string' && !Buffer.isBuffer(v)) return false;
    }
  }
  return true;
};

const bytesField = (b: Bytes, size: number): number => (b === null || b === undefined ? 1 : varIntSize(size) + size);

const writeBytesField = (buf: Buffer, at: number, b: Bytes, size: number): number => {
  if (b === null || b === undefined) return writeVarInt(buf, at, -1);
  at = writeVarInt(buf, at, size);
  if (typeof b === 'string') buf.write(b, at, size, 'utf8');
  else b.copy(buf, at);
  return at + size;
};

/** The records of one batch, as kafkajs's Record v0 writes them (timestamp delta 0: no record has a timestamp). */
export const encodeRecords = (messages: Message[]): Buffer => {
  const n = messages.length;
  // Per record: key size, value size, body size, then per header its key and value sizes.
  const sizes: number[] = [];
  let total = 0;
  for (let i = 0; i < n; i++) {
    const m = messages[i]!;
    const keySize = m.key === null || m.key === undefined ? -1 : byteLength(m.key);
    const valueSize = m.value === null || m.value === undefined ? -1 : byteLength(m.value);
    let body = 1 + 1 + varIntSize(i) + bytesField(m.key, keySize) + bytesField(m.value, valueSize);
    const h = m.headers;
    const names = h ? Object.keys(h) : [];
    body += varIntSize(names.length);
    sizes.push(keySize, valueSize, 0);
    const bodyAt = sizes.length - 1;
    for (const name of names) {
      const ks = Buffer.byteLength(name, 'utf8');
      const vs = byteLength(h![name] as string | Buffer);
      body += varIntSize(ks) + ks + varIntSize(vs) + vs;
      sizes.push(ks, vs);
    }
    sizes[bodyAt] = body;
    total += varIntSize(body) + body;
  }
  const buf = Buffer.allocUnsafe(total);
  let at = 0;
  let s = 0;
  for (let i = 0; i < n; i++) {
    const m = messages[i]!;
    const keySize = sizes[s++]!;
    const valueSize = sizes[s++]!;
    at = writeVarInt(buf, at, sizes[s++]!);
    buf[at++] = 0; // attributes
    buf[at++] = 0; // timestamp delta (varlong 0)
    at = writeVarInt(buf, at, i); // offset delta
    at = writeBytesField(buf, at, m.key, keySize);
    at = writeBytesField(buf, at, m.value, valueSize);
    const h = m.headers;
    const names = h ? Object.keys(h) : [];
    at = writeVarInt(buf, at, names.length);
    for (const name of names) {
      const ks = sizes[s++]!;
      const vs = sizes[s++]!;
      at = writeVarInt(buf, at, ks);
      buf.write(name, at, ks, 'utf8');
      at += ks;
      at = writeBytesField(buf, at, h![name] as string | Buffer, vs);
    }
  }
  return buf;
};

type Kit = { Encoder: new () => KafkaEncoder; Long: { fromInt: (n: number) => unknown } };

const encodeRequest = (kit: Kit, args: RequestArgs): KafkaEncoder => {
  const { Encoder, Long } = kit;
  const transactionalId = args.transactionalId ?? null;
  const producerId = args.producerId ?? Long.fromInt(-1);
  const producerEpoch = args.producerEpoch ?? 0;
  const out = new Encoder().writeString(transactionalId).writeInt16(args.acks).writeInt32(args.timeout).writeInt32(args.topicData.length);
  for (const { topic, partitions } of args.topicData) {
    out.writeString(topic).writeInt32(partitions.length);
    for (const { partition, firstSequence, messages } of partitions) {
      const now = Date.now();
      const records = encodeRecords(messages);
      const body = new Encoder()
        .writeInt16(transactionalId ? 16 : 0) // attributes: no compression, create time, transactional bit
        .writeInt32(messages.length - 1)
        .writeInt64(now)
        .writeInt64(now)
        .writeInt64(producerId)
        .writeInt16(producerEpoch)
        .writeInt32(firstSequence ?? 0)
        .writeInt32(messages.length);
      body.writeBufferInternal(records);
      const batch = new Encoder().writeInt32(0).writeInt8(2).writeUInt32(crc32c(body.buffer)).writeEncoder(body);
      const recordBatch = new Encoder().writeInt64(Long.fromInt(0)).writeBytes(batch.buffer);
      out.writeInt32(partition).writeInt32(recordBatch.size()).writeEncoder(recordBatch);
    }
  }
  return out;
};

/** Installs the fast record encoding once per process; false when kafkajs no longer has the shape it replaces. */
export const useFastRecordEncoding = (): boolean => {
  let mod: { exports: RequestFn } | undefined;
  let kit: Kit;
  try {
    const path = require.resolve(V3_REQUEST);
    require(V3_REQUEST);
    mod = require.cache[path] as { exports: RequestFn } | undefined;
    kit = {
      Encoder: require('kafkajs/src/protocol/encoder.js') as Kit['Encoder'],
      Long: require('kafkajs/src/utils/long.js') as Kit['Long'],
    };
  } catch {
    return false;
  }
  if (!mod || typeof mod.exports !== 'function') return false;
  if (mod.exports.__howkFastRecords) return true;
  const original = mod.exports;
  const fast: RequestFn = (args) => {
    const req = original(args);
    const eligible = (args.compression ?? 0) === 0 && args.topicData.every((t) => t.partitions.every((p) => p.messages.length > 0 && plain(p.messages)));
    return eligible ? { ...req, encode: async () => encodeRequest(kit, args) } : req;
  };
  fast.__howkFastRecords = true;
  fast.__howkOriginal = original;
  mod.exports = fast;
  return true;
};

/** kafkajs's own v3 produce request builder, for comparison in tests. */
export const originalProduceRequest = (): RequestFn => {
  useFastRecordEncoding();
  const mod = require.cache[require.resolve(V3_REQUEST)] as { exports: RequestFn };
  return mod.exports.__howkOriginal ?? mod.exports;
};
