import type { Buffer } from 'node:buffer';
import { createRequire } from 'node:module';

// kafkajs 2.2.4 decodes the offset and timestamp of every consumed record with BigInt
// arithmetic (its Long type: a parse, an add and a toString each) and folds its headers with
// an object spread. The decoding below gives the same record object for the common shape:
// varints of at most four bytes, offsets and timestamps within Number's safe integers, no
// record headers. Any other record is decoded by kafkajs itself, from the same bytes.
// It must be installed before kafkajs first loads its record batch decoder (at the first
// fetch), which captures the record decoder when it loads.

const require = createRequire(import.meta.url);

type Decoder = { buffer: Buffer; offset: number };
type BatchContext = { firstOffset?: string; firstTimestamp?: string; magicByte?: number; isControlBatch?: boolean; timestampType?: number; maxTimestamp?: string };
type RecordDecoder = ((decoder: Decoder, batchContext?: BatchContext) => unknown) & { __howkFastRecords?: true; __howkOriginal?: RecordDecoder };

const RECORD_DECODER = 'kafkajs/src/protocol/recordBatch/record/v0/decoder.js';
const BATCH_DECODER = 'kafkajs/src/protocol/recordBatch/v0/decoder.js';
const LOG_APPEND_TIME = 1;
/** Sentinel of a varint the fast path does not read (five bytes or more, or past the buffer). */
const LONG = 0x7fffffff;

/** A zigzag varint of at most four bytes at `at` (kafkajs reads these exactly); LONG otherwise. `end` receives where it ends. */
const varInt = (buf: Buffer, at: number, end: { at: number }): number => {
  let result = 0;
  for (let shift = 0; shift < 28; shift += 7) {
    if (at >= buf.length) return LONG;
    const b = buf[at++]!;
    result |= (b & 0x7f) << shift;
    if (b < 0x80) {
      end.at = at;
      return (result >>> 1) ^ -(result & 1);
    }
  }
  return LONG;
};

/** `base` (a decimal string, as kafkajs's Long prints it) plus `delta`, while both stay exact as Numbers. */
const plus = (base: string | undefined, delta: number): string | undefined => {
  if (base === undefined) return undefined;
  const n = Number(base);
  if (!Number.isSafeInteger(n) || String(n) !== base) return undefined;
  const sum = n + delta;
  return Number.isSafeInteger(sum) ? String(sum) : undefined;
};

const makeFast = (original: RecordDecoder): RecordDecoder => {
  const end = { at: 0 };
  const bytes = (buf: Buffer, at: number): { v: Buffer | null; at: number } | undefined => {
    const len = varInt(buf, at, end);
    if (len === LONG || len < -1) return undefined;
    if (len === -1) return { v: null, at: end.at };
    if (end.at + len > buf.length) return undefined;
    return { v: buf.subarray(end.at, end.at + len), at: end.at + len };
  };
  const fast: RecordDecoder = (decoder, batchContext = {}) => {
    const { firstOffset, firstTimestamp, magicByte, isControlBatch = false, timestampType, maxTimestamp } = batchContext;
    const buf = decoder.buffer;
    const start = decoder.offset;
    if (start >= buf.length) return original(decoder, batchContext);
    const attributes = buf.readInt8(start);
    const timestampDelta = varInt(buf, start + 1, end);
    if (timestampDelta === LONG) return original(decoder, batchContext);
    const timestamp = timestampType === LOG_APPEND_TIME && maxTimestamp ? maxTimestamp : plus(firstTimestamp, timestampDelta);
    const offsetDelta = varInt(buf, end.at, end);
    const offset = offsetDelta === LONG ? undefined : plus(firstOffset, offsetDelta);
    if (timestamp === undefined || offset === undefined) return original(decoder, batchContext);
    const key = bytes(buf, end.at);
    const value = key && bytes(buf, key.at);
    const headerCount = value ? varInt(buf, value.at, end) : LONG;
    // Headers (rare here) keep kafkajs's own folding of repeated names.
    if (!key || !value || (headerCount !== 0 && headerCount !== -1)) return original(decoder, batchContext);
    decoder.offset = end.at;
    return { magicByte, attributes, timestamp, offset, key: key.v, value: value.v, headers: {}, isControlRecord: isControlBatch, batchContext };
  };
  fast.__howkFastRecords = true;
  fast.__howkOriginal = original;
  return fast;
};

/**
 * Installs the fast record decoding once per process; false when kafkajs no longer has the
 * shape it replaces, or already loaded its batch decoder (then kafkajs decodes as before).
 */
export const useFastRecordDecoding = (): boolean => {
  try {
    const path = require.resolve(RECORD_DECODER);
    require(RECORD_DECODER);
    const mod = require.cache[path] as { exports: RecordDecoder } | undefined;
    if (!mod || typeof mod.exports !== 'function') return false;
    if (mod.exports.__howkFastRecords) return true;
    if (require.cache[require.resolve(BATCH_DECODER)]) return false;
    mod.exports = makeFast(mod.exports);
    return true;
  } catch {
    return false;
  }
};

/** kafkajs's own record decoder and the fast one, for comparison in tests. */
export const recordDecoders = (): { original: RecordDecoder; fast: RecordDecoder } => {
  const current = require(RECORD_DECODER) as RecordDecoder;
  const original = current.__howkOriginal ?? current;
  return { original, fast: current.__howkFastRecords ? current : makeFast(original) };
};
