import type { RedisKeys } from '../../core/domain/keys';
import type { IdempotencyClaim } from '../../core/ports/hot-state';
import { execPipeline } from './exec';
import type { ScriptedClient } from './scripts';
import { pipe } from './slots';

// Making idempotency claims final (core/ports/hot-state.ts IdempotencyStore), one pipeline per call.

/** SET XX: only the claim's own request holds its value in flight (see the port). */
export const commitIdempotency = async (redis: ScriptedClient, k: RedisKeys, items: (IdempotencyClaim & { from: string })[], ttlMs: number): Promise<void> => {
  if (!items.length) return;
  // One pipeline per slot on a cluster (slots.ts): a key layout's claims of several configs span slots.
  const p = pipe(redis);
  for (const { configId, key, webhookId } of items) p.set(k.idempotency(configId, key), webhookId, 'PX', Math.max(1, Math.ceil(ttlMs)), 'XX');
  await execPipeline(p);
};
