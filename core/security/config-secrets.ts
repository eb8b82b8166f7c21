import { CompactedTable } from '../log/compacted-table';
import type { Logger } from '../ports/logger';
import { decodeConfigSecret, encodeConfigSecret, type ConfigSecretRecord, type SecretEntry } from '../records/config-secret';
import { NotConfiguredError, NotFoundError, UnavailableError } from '../errors/errors';
import type { LogProducer } from '../ports/log';
import { toBase64, toHex } from '../signing/encoding';
import type { SecretBox } from '../signing/secret-box';

// Per-config signing secrets. The record of a config lists its secrets, each sealed with
// the secret box (AES-256-GCM, HOWK_SECRETS_KEY) before it is produced; a rotation keeps the
// old secret until `expires_at` (now + signing.rotation_overlap) so that deliveries carry one
// signature per valid secret and receivers can switch at their own pace.

/** What the API shows about a config's secrets: ids and dates, never a value. */
export type SecretMeta = Omit<SecretEntry, 'sealed'>;
export type ConfigSecretView = { config_id: string; secrets: SecretMeta[] };

/** The replica of howk.config-secrets on one instance (core/log/compacted-table.ts: a malformed record leaves a config's secrets as they were). */
export class ConfigSecretTable {
  private readonly rows: CompactedTable<ConfigSecretRecord>;

  constructor(log?: Logger) {
    this.rows = new CompactedTable({ topic: 'config-secrets', decode: decodeConfigSecret, log });
  }

  apply(configId: string, value: string | null): void {
    this.rows.apply(configId, value);
  }

  get(configId: string): ConfigSecretRecord | undefined {
    return this.rows.get(configId);
  }
}

/** Secrets still valid at `now`, newest first (the HOWK scheme signs with the first only). */
export const validEntries = (r: ConfigSecretRecord | undefined, now: number): SecretEntry[] =>
  (r?.secrets ?? []).filter((s) => s.expires_at === null || Date.parse(s.expires_at) > now).sort((a, b) => b.created_at.localeCompare(a.created_at));

/** A Standard Webhooks secret: `whsec_` + base64 of 32 random bytes. */
export const generateSigningSecret = (): string => `whsec_${toBase64(crypto.getRandomValues(new Uint8Array(32)))}`;

export type ConfigSecretDeps = {
  table: ConfigSecretTable;
  producer: LogProducer;
  topic: string;
  box?: SecretBox;
  clock: { now(): number };
  overlapMs: number;
  /** False until the replica has caught up: answering from a partial table could drop a secret. */
  synced: () => boolean;
};

export const createConfigSecrets = (d: ConfigSecretDeps) => {
  // Opened secrets, by envelope: decrypt once, not per delivery. Bounded; oldest dropped first.
  const opened = new Map<string, string>();
  const view = (configId: string, r: ConfigSecretRecord | undefined): ConfigSecretView => ({
    config_id: configId,
    secrets: validEntries(r, d.clock.now()).map(({ sealed: _s, ...m }) => m),
  });
  const needBox = (): SecretBox => {
    if (!d.box) throw new NotConfiguredError('per-config signing secrets need HOWK_SECRETS_KEY on the server (they are stored encrypted)');
    return d.box;
  };
  const needSync = () => {
    if (!d.synced()) throw new UnavailableError('config secrets are still loading', 1);
  };
  const write = async (configId: string, r: ConfigSecretRecord | null) => {
    const value = r && encodeConfigSecret(r);
    await d.producer.send([{ topic: d.topic, key: configId, value }]);
    // Read-your-writes on this instance; the others follow through the topic.
    d.table.apply(configId, value);
  };
  const entry = async (secret: string, now: number): Promise<SecretEntry> => ({
    id: `sec_${toHex(crypto.getRandomValues(new Uint8Array(8)))}`,
    sealed: await needBox().seal(secret),
    created_at: new Date(now).toISOString(),
    expires_at: null,
  });

  return {
    describe(configId: string): ConfigSecretView {
      needSync();
      return view(configId, d.table.get(configId));
    },
    /** Replaces every secret of the config at once (no overlap). */
    async set(configId: string, secret: string): Promise<ConfigSecretView> {
      needSync();
      const now = d.clock.now();
      const r: ConfigSecretRecord = { config_id: configId, secrets: [await entry(secret, now)], updated_at: new Date(now).toISOString() };
      await write(configId, r);
      return view(configId, r);
    },
    /** Adds a new current secret; the previous current one stays valid for the overlap. */
    async rotate(configId: string, secret?: string): Promise<ConfigSecretView & { secret?: string }> {
      needSync();
      const now = d.clock.now();
      const fresh = secret ?? generateSigningSecret();
      const until = new Date(now + d.overlapMs).toISOString();
      const kept = validEntries(d.table.get(configId), now).map((s) => (s.expires_at === null || s.expires_at > until ? { ...s, expires_at: until } : s));
      const r: ConfigSecretRecord = { config_id: configId, secrets: [await entry(fresh, now), ...kept], updated_at: new Date(now).toISOString() };
      await write(configId, r);
      // A generated secret is shown once, here; a given one is not echoed back.
      return { ...view(configId, r), ...(secret === undefined ? { secret: fresh } : {}) };
    },
    async remove(configId: string): Promise<ConfigSecretView> {
      needSync();
      if (!d.table.get(configId)) throw new NotFoundError(`signing secret of config ${configId}`);
      await write(configId, null);
      return { config_id: configId, secrets: [] };
    },
    /** The plaintext secrets that sign a delivery of this config now; [] when it has none. An array, not a promise, once they are opened (every delivery signs). */
    secretsFor(configId: string, now: number): string[] | Promise<string[]> {
      const entries = validEntries(d.table.get(configId), now);
      if (!entries.length) return [];
      const box = needBox();
      const known = entries.map((e) => opened.get(e.sealed));
      if (!known.includes(undefined)) return known as string[];
      return Promise.all(
        entries.map(async (e) => {
          let s = opened.get(e.sealed);
          if (s === undefined) {
            s = await box.open(e.sealed);
            if (opened.size >= 10_000) opened.delete(opened.keys().next().value as string);
            opened.set(e.sealed, s);
          }
          return s;
        }),
      );
    },
  };
};

export type ConfigSecrets = ReturnType<typeof createConfigSecrets>;
