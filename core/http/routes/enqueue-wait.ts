import type { Context } from 'hono';
import { z } from 'zod';
import { checkConfigId } from '../../domain/config-id';
import { BackloggedError, ValidationError, errorMessage } from '../../errors/errors';
import type { EnqueueResult } from '../../domain/enqueue';
import type { SyncSlot } from '../../pipeline/sync-wait';
import type { FirstOutcome } from '../../ports/outcome-bus';
import type { ApiDeps } from '../deps';

// The enqueue door: the outstanding bound of a config, and the wait for the first attempts
// (?wait=5s, or Prefer: wait=5). docs/API.md, Waiting for the first attempt.

const WAIT = /^(\d{1,9}(?:\.\d{1,3})?)(ms|s)?$/;

const waitMs = (v: string): number => {
  const m = WAIT.exec(v.trim());
  if (!m) throw new ValidationError(`wait must be a duration such as 5s, 500ms or 5 (seconds); got ${JSON.stringify(v.slice(0, 40))}`, 'wait');
  return Number(m[1]) * (m[2] === 'ms' ? 1 : 1000);
};

/** The wait a request asks for, in ms, cut to api.sync_max_wait (0: none). The query wins over Prefer. */
export const requestedWait = (c: Context, maxMs: number): number => {
  const q = c.req.query('wait');
  let ms = 0;
  if (q !== undefined) ms = waitMs(q);
  else {
    // Prefer: respond-async, wait=5 (RFC 7240: preferences are comma-separated; wait is in seconds)
    for (const pref of (c.req.header('prefer') ?? '').split(',')) {
      const [name, value] = pref.split('=', 2).map((p) => p.trim());
      if (name?.toLowerCase() === 'wait') ms = waitMs((value ?? '').replace(/^"|"$/g, ''));
    }
  }
  return Math.min(ms, maxMs);
};

/** A config's bound of outstanding webhooks: its api.outstanding_overrides entry, else api.max_outstanding_per_config (0: none). */
export const outstandingBound = (api: ApiDeps['config']['api'], configId: string): number => api.outstanding_overrides[configId] ?? api.max_outstanding_per_config;

/** 429 while the config has its bound of outstanding webhooks. Fails open when the count cannot be read. */
export const checkOutstanding = async (d: ApiDeps, configId: string): Promise<void> => {
  const bound = outstandingBound(d.config.api, configId);
  if (bound <= 0 || !d.outstanding) return;
  let n: number;
  try {
    n = await d.outstanding.countOutstanding(configId);
  } catch (e) {
    d.log.warn('outstanding count unavailable: enqueue admitted', { error: errorMessage(e) });
    return;
  }
  d.door?.outstanding(configId, n);
  if (n >= bound) {
    d.door?.refused('outstanding');
    throw new BackloggedError(configId, n, bound);
  }
};

/**
 * The enqueue door's checks, in the order both enqueue routes answer them: the config id, the
 * wait asked for, the body, then the config's outstanding bound (read only for a valid request).
 */
export const admitEnqueue = async <T>(c: Context, d: ApiDeps, parse: (text: string, api: ApiDeps['config']['api']) => T): Promise<{ configId: string; ms: number; body: T }> => {
  const configId = c.req.param('config')!;
  checkConfigId(configId);
  // A runtime without waits (the edge) refuses the query, which asks for one explicitly; a
  // Prefer: wait stays a preference (RFC 7240), answered at once with Howk-Wait: unsupported.
  if (!d.sync && c.req.query('wait') !== undefined)
    throw new ValidationError('wait is not supported here: this runtime answers once Kafka acknowledged the webhook; poll GET /webhooks/:id/status for its outcome', 'wait');
  const ms = requestedWait(c, d.config.api.sync_max_wait);
  const body = parse(await c.req.text(), d.config.api);
  await checkOutstanding(d, configId);
  return { configId, ms, body };
};

export const SyncOutcome = z.object({
  attempts: z.number().int(),
  status_code: z.number().int().nullable(),
  error: z.string().nullable(),
  next_retry_at: z.string().nullable().describe('retrying: when the next attempt is due'),
  dead_reason: z.string().nullable().describe('dead_lettered: the reason type'),
});
export const ItemStatus = z
  .enum(['pending', 'duplicate', 'delivered', 'retrying', 'dead_lettered'])
  .describe('pending: accepted, no outcome yet (no wait, or the wait expired); delivered, retrying, dead_lettered: the first attempt, when the request waited for it');

export type ItemView = { webhook_id: string; status: z.infer<typeof ItemStatus>; endpoint: string; outcome?: z.infer<typeof SyncOutcome> };

const view = (r: EnqueueResult, o: FirstOutcome | undefined): ItemView => {
  if (!o || r.status !== 'pending') return r;
  const { webhook_id: _id, status, ...outcome } = o;
  return { ...r, status, outcome };
};

/**
 * Enqueues `run` does, waiting for their first attempts when the request asked to. The wait
 * is granted only while fewer than api.sync_max_waiting requests wait, and fewer than
 * api.sync_max_waiting_per_config of the config's (else answered at once, `Howk-Wait: busy`);
 * the webhooks are durable (produced, acknowledged) before any wait.
 */
export const enqueueMaybeWaiting = async (
  c: Context,
  d: ApiDeps,
  configId: string,
  ms: number,
  run: (opts: { awaitedBy?: string; beforeProduce?: (ids: string[]) => void }) => Promise<EnqueueResult[]>,
): Promise<{ items: ItemView[]; waited: boolean }> => {
  let slot: SyncSlot | null = null;
  if (ms > 0) {
    slot = d.sync?.reserve(configId) ?? null;
    if (!slot) {
      c.header('Howk-Wait', d.sync ? 'busy' : 'unsupported');
      if (d.sync) d.door?.refused('wait_busy');
    }
  }
  try {
    if (!slot) return { items: await run({}), waited: false };
    const results = await run({ awaitedBy: d.sync!.listener, beforeProduce: (ids) => slot!.watch(ids) });
    const got = await slot.wait(ms, c.req.raw.signal);
    const items = results.map((r) => view(r, got.get(r.webhook_id)));
    c.header('Preference-Applied', `wait=${Math.ceil(ms / 1000)}`);
    c.header('Howk-Wait', items.some((i) => i.status === 'pending') ? 'expired' : 'done');
    return { items, waited: true };
  } finally {
    slot?.release();
  }
};
