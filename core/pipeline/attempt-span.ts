import { outcomeClass } from '../metrics/events';
import type { SpanAttributes, TraceSpan, Tracing } from '../ports/tracing';
import type { Attempted } from './outcome-records';
import type { Webhook } from '../domain/webhook';

/**
 * The span of one attempt: a child of the webhook's enqueue span (its `trace`). A webhook
 * enqueued without one (the edge, tracing turned on since) starts its trace here, and its
 * later attempts (the retry record copies `trace`) are children of this one.
 */
export const startAttemptSpan = (tracing: Tracing | undefined, w: Webhook, lane: string): TraceSpan | undefined => {
  if (!tracing) return undefined;
  const span = tracing.start('howk.attempt', 'client', w.trace, {
    'howk.webhook_id': w.id,
    'howk.config_id': w.config_id,
    'howk.endpoint_hash': w.endpoint_hash,
    'howk.attempt': w.attempt + 1,
    'howk.lane': lane,
  });
  if (!w.trace && span.traceparent) w.trace = span.traceparent;
  return span;
};

/** Ends it with the attempt's outcome: status code, outcome class, what was decided; an error status unless delivered. */
export const endAttemptSpan = (span: TraceSpan | undefined, o: Attempted): void => {
  if (!span) return;
  const r = o.response;
  const attrs: SpanAttributes = { 'howk.outcome_class': outcomeClass(r), 'howk.decision': o.decision.kind, 'howk.duration_ms': r.durationMs };
  if (r.kind === 'response') attrs['http.response.status_code'] = r.status;
  if (o.decision.kind === 'retry') attrs['howk.deferred'] = o.decision.deferred;
  if (o.decision.kind === 'dead') attrs['howk.dead_reason'] = o.decision.reason_type;
  const error = o.decision.kind === 'delivered' ? undefined : r.kind === 'response' ? `HTTP ${r.status}` : `${r.kind}: ${r.error}`;
  span.end(attrs, error);
};
