import { describe, expect, it } from 'vitest';
import type { Webhook } from '../../core/domain/webhook';
import { endAttemptSpan, startAttemptSpan } from '../../core/pipeline/attempt-span';
import type { Attempted } from '../../core/pipeline/outcome-records';
import type { SpanAttributes, Tracing } from '../../core/ports/tracing';
import { testWebhook } from '../helpers/webhook';

type Started = { name: string; parent: string | undefined; attrs: SpanAttributes; ended?: { attrs?: SpanAttributes; error?: string } };

const fakeTracing = () => {
  const started: Started[] = [];
  const tracing: Tracing = {
    outbound: false,
    start(name, _kind, parent, attrs) {
      const s: Started = { name, parent, attrs };
      started.push(s);
      return { traceparent: `00-${'a'.repeat(32)}-${String(started.length).padStart(16, '0')}-01`, end: (a, error) => void (s.ended = { attrs: a, error }) };
    },
  };
  return { tracing, started };
};

const webhook = (over: Partial<Webhook> = {}): Webhook => testWebhook({ config_id: 'c', endpoint: 'https://example.test/', endpoint_hash: 'h', ...over });

describe('attempt spans', () => {
  it('are children of the enqueue span the webhook carries', () => {
    const { tracing, started } = fakeTracing();
    const parent = `00-${'b'.repeat(32)}-${'c'.repeat(16)}-01`;
    startAttemptSpan(tracing, webhook({ trace: parent, attempt: 2 }), 'slow');
    expect(started[0]).toMatchObject({ name: 'howk.attempt', parent, attrs: { 'howk.attempt': 3, 'howk.lane': 'slow', 'howk.webhook_id': 'wh_1' } });
  });

  it('start the trace of a webhook enqueued without one, which its retry record keeps', () => {
    const { tracing, started } = fakeTracing();
    const w = webhook();
    const first = startAttemptSpan(tracing, w, 'fast')!;
    expect(started[0]!.parent).toBeUndefined();
    expect(w.trace).toBe(first.traceparent);
    // decide() builds the retry from the webhook: the copy carries the trace.
    startAttemptSpan(tracing, { ...w, attempt: 1 }, 'fast');
    expect(started[1]!.parent).toBe(first.traceparent);
  });

  it('end with the status code, the decision and an error status unless delivered', () => {
    const { tracing, started } = fakeTracing();
    const w = webhook();
    const o = (status: number, decision: Attempted['decision']): Attempted => ({
      webhook: w,
      at: 0,
      decision,
      response: { kind: 'response', status, headers: {}, bodySnippet: '', durationMs: 12 } as unknown as Attempted['response'],
    });
    endAttemptSpan(startAttemptSpan(tracing, w, 'fast'), o(503, { kind: 'retry', next: w, dueAt: 1, deferred: false }));
    endAttemptSpan(startAttemptSpan(tracing, w, 'fast'), o(200, { kind: 'delivered' }));
    expect(started[0]!.ended).toEqual({
      attrs: { 'http.response.status_code': 503, 'howk.outcome_class': '5xx', 'howk.decision': 'retry', 'howk.deferred': false, 'howk.duration_ms': 12 },
      error: 'HTTP 503',
    });
    expect(started[1]!.ended).toEqual({
      attrs: { 'http.response.status_code': 200, 'howk.outcome_class': '2xx', 'howk.decision': 'delivered', 'howk.duration_ms': 12 },
      error: undefined,
    });
  });

  it('are not made when tracing is off', () => {
    const w = webhook();
    expect(startAttemptSpan(undefined, w, 'fast')).toBeUndefined();
    expect(w.trace).toBeUndefined();
  });
});
