import { z } from 'zod';

// The record of howk.config-secrets (compacted, one partition): a config's signing secrets,
// each sealed with the secret box (AES-256-GCM, HOWK_SECRETS_KEY) before it is produced.
// Key: the config id (`configSecretKey`). Value: a ConfigSecretRecord. Tombstone: the
// config's secrets are gone. A record under a key that is not its config's is malformed.

export const SecretEntrySchema = z.object({
  id: z.string(),
  /** `enc:v1:<key id>:<iv>:<ciphertext>`; never the plaintext */
  sealed: z.string().startsWith('enc:v1:'),
  created_at: z.string(),
  /** null: current; otherwise the end of its rotation overlap */
  expires_at: z.string().nullable(),
});
export type SecretEntry = z.infer<typeof SecretEntrySchema>;

export const ConfigSecretRecordSchema = z.object({ config_id: z.string(), secrets: z.array(SecretEntrySchema), updated_at: z.string() });
export type ConfigSecretRecord = z.infer<typeof ConfigSecretRecordSchema>;

export const configSecretKey = (r: Pick<ConfigSecretRecord, 'config_id'>): string => r.config_id;

export const encodeConfigSecret = (r: ConfigSecretRecord): string => JSON.stringify(r);

/** The secrets stored under `key`, or undefined when the value is not a record of them or belongs to another config. */
export const decodeConfigSecret = (key: string, value: string): ConfigSecretRecord | undefined => {
  const p = ConfigSecretRecordSchema.safeParse(JSON.parse(value));
  return p.success && configSecretKey(p.data) === key ? p.data : undefined;
};
