import { Buffer } from 'node:buffer';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { crc32c } from '../../workers/kafka/crc32c';

const require = createRequire(import.meta.url);
// kafkajs's own record batch checksum: the reference.
const kafkajsCrc32C = require('kafkajs/src/protocol/recordBatch/crc32C/index.js') as (b: Buffer) => number;

describe('CRC-32C of a record batch', () => {
  it('is the checksum kafkajs computes, for every length and content', () => {
    let s = 0x9e3779b9;
    const byte = () => ((s = (Math.imul(s, 1664525) + 1013904223) | 0) >>> 24) & 0xff;
    for (let len = 0; len <= 300; len++) {
      const b = Buffer.from(Array.from({ length: len }, byte));
      expect(crc32c(b), `length ${len}`).toBe(kafkajsCrc32C(b));
    }
    const big = Buffer.from(Array.from({ length: 100_003 }, byte));
    expect(crc32c(big)).toBe(kafkajsCrc32C(big));
    expect(crc32c(big.subarray(17, 5000))).toBe(kafkajsCrc32C(big.subarray(17, 5000)));
  });

  it('matches the standard check value', () => {
    expect(crc32c(Buffer.from('123456789'))).toBe(0xe3069283);
  });
});
