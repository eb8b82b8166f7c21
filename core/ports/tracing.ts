// Distributed tracing as the pipeline sees it (docs/OPERATIONS.md, Tracing): one trace per
// webhook, its root span at enqueue, one child span per delivery attempt. The host provides
// it (OpenTelemetry in Node, workers/node/tracing.ts); without it (tracing.enabled false,
// the edge, unit tests) the pipeline creates no span and writes no trace context anywhere.

export type SpanAttributes = Record<string, string | number | boolean>;

export type TraceSpan = {
  /** The W3C traceparent of this span: what records and outbound requests carry. */
  readonly traceparent: string;
  /** Ends the span with these attributes; `error` sets its status to error with that message. */
  end(attributes?: SpanAttributes, error?: string): void;
};

export type Tracing = {
  /** Outbound deliveries carry the attempt span's `traceparent` header (tracing.outbound_traceparent). */
  readonly outbound: boolean;
  /**
   * Starts a span: `parent` is a W3C traceparent (a new trace without one). `kind` as in
   * OpenTelemetry: the enqueue produces, an attempt is a client call.
   */
  start(name: string, kind: 'producer' | 'client', parent: string | undefined, attributes: SpanAttributes): TraceSpan;
};

/** The record header (and outbound request header) of the trace context. */
export const TRACEPARENT = 'traceparent';
