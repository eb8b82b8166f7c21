import { Buffer } from 'node:buffer';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { webhookId } from '../../core/domain/ids';
import { recordDecoders, useFastRecordDecoding } from '../../workers/kafka/fetch-decoding';

const require = createRequire(import.meta.url);
type Enc = { buffer: Buffer };
const Record = require('kafkajs/src/protocol/recordBatch/record/v0/index.js') as (r: {
  offsetDelta: number;
  timestampDelta: number;
  key: string | Buffer | null;
  value: string | Buffer | null;
  headers?: Record<string, string | string[]>;
}) => Enc;
const Decoder = require('kafkajs/src/protocol/decoder.js') as new (b: Buffer) => { buffer: Buffer; offset: number; readVarIntBytes(): Buffer };

// A record as the batch decoder hands it over: its own bytes, after the length prefix.
const recordBytes = (r: Parameters<typeof Record>[0]): Buffer => new Decoder(Record(r).buffer).readVarIntBytes();

const contexts = [
  { firstOffset: '0', firstTimestamp: '1764600000123', magicByte: 2, isControlBatch: false, timestampType: 0, maxTimestamp: '1764600000999' },
  { firstOffset: '81234567', firstTimestamp: '1764600000123', magicByte: 2, timestampType: 1, maxTimestamp: '1764600000999' },
  { firstOffset: '9223372036854775000', firstTimestamp: '9007199254740990', magicByte: 2, isControlBatch: true, timestampType: 0, maxTimestamp: '0' },
  { firstOffset: '-1', firstTimestamp: '-1', magicByte: 2, timestampType: 0 },
];
const records: Parameters<typeof Record>[0][] = [
  { offsetDelta: 0, timestampDelta: 0, key: webhookId(), value: JSON.stringify({ id: webhookId(), payload: { a: 'é€😀' } }) },
  { offsetDelta: 1, timestampDelta: 0, key: null, value: null },
  { offsetDelta: 63, timestampDelta: -5, key: '', value: '' },
  { offsetDelta: 64, timestampDelta: 1_000_000, key: Buffer.from([0, 255]), value: 'x'.repeat(20_000) },
  { offsetDelta: 2 ** 27 + 5, timestampDelta: 2 ** 40, key: 'k', value: 'v' },
  { offsetDelta: 8191, timestampDelta: 3, key: 'k', value: 'v', headers: { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' } },
  { offsetDelta: 5, timestampDelta: 3, key: 'k', value: 'v', headers: { a: ['1', '2'], b: '3' } },
];

describe('fetch record decoding (records read as kafkajs reads them)', () => {
  const { original, fast } = recordDecoders();

  it('gives the record kafkajs gives, for every record shape and batch context', () => {
    for (const ctx of contexts)
      for (const r of records) {
        const bytes = recordBytes(r);
        const want = original(new Decoder(bytes), ctx);
        const got = fast(new Decoder(bytes), ctx);
        expect(got, `${JSON.stringify(ctx)} ${r.offsetDelta}`).toEqual(want);
      }
  });

  it('is what kafkajs decodes consumed records with, once installed', () => {
    expect(useFastRecordDecoding()).toBe(true);
    expect(require('kafkajs/src/protocol/recordBatch/record/v0/decoder.js')).not.toBe(original);
  });
});
