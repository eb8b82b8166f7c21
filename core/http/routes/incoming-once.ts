import type { Context } from 'hono';
import { keys } from '../../domain/keys';
import { errorMessage, UnavailableError } from '../../errors/errors';
import type { InboundClaim, InboundReplays } from '../../ports/inbound-replays';
import type { Logger } from '../../ports/logger';
import { toHex, utf8 } from '../../signing/encoding';
import type { ReplayMark } from '../../signing/inbound';

// A signed request runs once per signature window: copies (a replay by whoever saw the
// request, or the provider's own retry of the same message) get the first run's answer.

/** Set on an answer that is the first run's, given again to a copy. */
export const REPLAY_HEADER = 'Howk-Replay';

export type OnceOptions = {
  store: InboundReplays | undefined;
  log: Logger;
  transformer: string;
  provider: string;
  /** The verifier's mark; schemes without a signed timestamp give none. */
  mark: ReplayMark | undefined;
  now: number;
  toleranceSec: number;
};

const claimOrUnavailable = async (o: OnceOptions, key: string, ttlMs: number): Promise<InboundClaim> => {
  try {
    return await o.store!.claim(key, ttlMs);
  } catch (e) {
    // Closed, not open: the provider retries a 503 later, when a copy can be told apart again.
    o.log.warn('inbound replay check failed; nothing run', { transformer: o.transformer, error: errorMessage(e) });
    throw new UnavailableError('replay protection is unavailable (hot state)', 2);
  }
};

/** `run` once per signed request; a copy gets the stored answer (200) or 409 while the first runs. */
export const onceOnly = async (c: Context, o: OnceOptions, run: () => Promise<Response>): Promise<Response> => {
  if (!o.store || !o.mark) return run();
  const digest = toHex(new Uint8Array(await crypto.subtle.digest('SHA-256', utf8(o.mark.id) as BufferSource)));
  const key = keys.inboundReplay(o.transformer, digest);
  // Kept one tolerance past the last moment a copy verifies: api processes whose clocks
  // differ by less than that still find it.
  const ttlMs = Math.max(o.mark.validUntil - o.now, 0) + o.toleranceSec * 1000;
  const claim = await claimOrUnavailable(o, key, ttlMs);
  if (claim.kind === 'answered') {
    o.log.info('inbound replay answered from the first run; nothing run', { transformer: o.transformer, provider: o.provider });
    return new Response(claim.answer.body, { status: claim.answer.status, headers: { 'content-type': 'application/json', [REPLAY_HEADER]: 'true' } });
  }
  if (claim.kind === 'running') {
    c.header('Retry-After', '1');
    const message = `this signed ${o.provider} request is already being processed; retry to get its answer`;
    return c.json({ error: { code: 'replay_in_progress', message } }, 409);
  }
  let res: Response | undefined;
  try {
    res = await run();
  } finally {
    try {
      // Only an enqueue is remembered: a refused or failed run may be retried and run again.
      if (res?.status === 200) await o.store.answer(key, { status: 200, body: await res.clone().text() });
      else await o.store.release(key);
    } catch (e) {
      // The webhooks (if any) are enqueued either way; copies get 409 until the mark expires.
      o.log.warn('inbound replay mark not updated', { transformer: o.transformer, error: errorMessage(e) });
    }
  }
  return res;
};
