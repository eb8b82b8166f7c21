import { z } from 'zod';
import { HowkError } from '../core/errors/errors';
import { ApiKeyRecordSchema, KeyTable } from '../core/security/api-keys';
import { createKeyService, type KeyService } from '../core/security/key-service';

// API keys at the edge. The fleet's keys live on the compacted keys topic, which a Worker
// cannot replay; the edge takes the same records (hashes only, never tokens) from a Worker
// secret, HOWK_EDGE_API_KEYS, and checks tokens with the same code as howk-api. Keys are
// created and revoked on howk-api; `docs/EDGE.md` shows how to export them to the edge.

export const edgeKeyService = (recordsJson: string | undefined, clock: { now(): number }): KeyService => {
  const table = new KeyTable();
  if (recordsJson) {
    const records = z.array(ApiKeyRecordSchema).parse(JSON.parse(recordsJson));
    for (const r of records) table.apply(r.id, JSON.stringify(r));
  }
  return createKeyService({
    table,
    producer: {
      send: () => Promise.reject(new HowkError('unsupported', 'API keys are managed on howk-api, not at the edge')),
      close: async () => {},
    },
    topic: '',
    clock,
    synced: () => true,
  });
};
