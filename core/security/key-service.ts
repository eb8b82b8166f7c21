import { NotFoundError, UnavailableError } from '../errors/errors';
import type { LogProducer } from '../ports/log';
import { encodeApiKey } from '../records/api-key';
import { generateKey, keyView, type ApiKeyRecord, type ApiKeyView, type KeyTable, type NewKey } from './api-keys';

// Create, list and revoke API keys: a record on the compacted keys topic (Kafka is the
// source of truth), applied to this instance's table at once (read-your-writes) and to
// every other instance's table by its replica.

export type KeyServiceDeps = {
  table: KeyTable;
  producer: LogProducer;
  topic: string;
  clock: { now(): number };
  synced: () => boolean;
};

export const createKeyService = (d: KeyServiceDeps) => {
  const needSync = () => {
    if (!d.synced()) throw new UnavailableError('API keys are still loading', 1);
  };
  const write = async (r: ApiKeyRecord) => {
    const value = encodeApiKey(r);
    await d.producer.send([{ topic: d.topic, key: r.id, value }]);
    d.table.apply(r.id, value);
  };
  return {
    synced: d.synced,
    /** Resolves to the live key of a token, or null. Callers check `synced` first. */
    verify: (token: string) => d.table.verify(token),
    async create(k: NewKey): Promise<ApiKeyView & { key: string }> {
      needSync();
      const { token, record } = await generateKey(k, new Date(d.clock.now()));
      await write(record);
      return { ...keyView(record), key: token };
    },
    list(): ApiKeyView[] {
      needSync();
      return d.table.list().map(keyView);
    },
    async revoke(id: string): Promise<ApiKeyView> {
      needSync();
      const r = d.table.get(id);
      if (!r) throw new NotFoundError(`API key ${id}`);
      if (r.revoked_at !== null) return keyView(r);
      const revoked = { ...r, revoked_at: new Date(d.clock.now()).toISOString() };
      await write(revoked);
      return keyView(revoked);
    },
  };
};

export type KeyService = ReturnType<typeof createKeyService>;
