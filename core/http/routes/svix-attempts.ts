import { z } from 'zod';
import type { MessageRecord } from '../../records/message';
import type { ApiDeps } from '../deps';

// Svix's message attempts, read from the status of each webhook a message became (its
// history keeps the latest attempts: core/domain/status.ts HISTORY_LIMIT).

export const AttemptOutSchema = z.object({
  id: z.string(),
  msgId: z.string(),
  endpointId: z.string(),
  url: z.string(),
  response: z.string(),
  responseStatusCode: z.number().int(),
  responseDurationMs: z.number(),
  status: z.number().int().describe('0 success, 2 fail (Svix MessageStatus)'),
  statusText: z.enum(['success', 'fail']),
  timestamp: z.string(),
  triggerType: z.number().int().describe('0 scheduled, 1 manual (a resend)'),
});
export type AttemptOut = z.infer<typeof AttemptOutSchema>;

/** The attempts of a message, of its delivery to one endpoint when `endpointId` is given; without `content`, no response bodies (Svix's with_content=false). */
export const attemptsOf = async (d: ApiDeps, m: MessageRecord, endpointId?: string, content = true): Promise<AttemptOut[]> => {
  const out: AttemptOut[] = [];
  for (const del of m.deliveries) {
    if (endpointId !== undefined && del.endpoint_id !== endpointId) continue;
    const s = await d.hot.getStatus(del.webhook_id);
    if (!s) continue;
    for (const a of s.history) {
      if (a.outcome === 'held') continue;
      const ok = a.outcome === 'delivered';
      out.push({
        id: `atmpt_${del.webhook_id}_${a.attempt}`,
        msgId: m.id,
        endpointId: del.endpoint_id,
        url: s.endpoint,
        response: content ? (a.response ?? a.error ?? '') : '',
        responseStatusCode: a.status_code ?? 0,
        responseDurationMs: a.duration_ms,
        status: ok ? 0 : 2,
        statusText: ok ? 'success' : 'fail',
        timestamp: a.at,
        triggerType: del.manual ? 1 : 0,
      });
    }
  }
  return out;
};
