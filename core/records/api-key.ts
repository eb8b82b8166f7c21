import { z } from 'zod';

// The record of howk.keys (compacted, one partition): an API key, its hash only (never the
// token). Key: the key id (`apiKeyKey`). Value: an ApiKeyRecord; a revocation is the record
// again with `revoked_at` set, so the id can never come back. Tombstone: the key is gone. A
// record under a key that is not its id is malformed.

export const SCOPES = ['enqueue', 'read', 'admin'] as const;
export type Scope = (typeof SCOPES)[number];

export const ApiKeyRecordSchema = z.object({
  id: z.string().regex(/^[0-9a-f]{16}$/),
  name: z.string().max(128),
  /** hex SHA-256 of the whole token */
  hash: z.string().regex(/^[0-9a-f]{64}$/),
  scopes: z.array(z.enum(SCOPES)).min(1),
  /** null: every config; otherwise the only configs this key reaches */
  config_ids: z.array(z.string()).nullable(),
  created_at: z.string(),
  revoked_at: z.string().nullable(),
});
export type ApiKeyRecord = z.infer<typeof ApiKeyRecordSchema>;

export const apiKeyKey = (r: Pick<ApiKeyRecord, 'id'>): string => r.id;

export const encodeApiKey = (r: ApiKeyRecord): string => JSON.stringify(r);

/** The key stored under `key`, or undefined when the value is not a key record or is another id's. */
export const decodeApiKey = (key: string, value: string): ApiKeyRecord | undefined => {
  const p = ApiKeyRecordSchema.safeParse(JSON.parse(value));
  return p.success && apiKeyKey(p.data) === key ? p.data : undefined;
};
