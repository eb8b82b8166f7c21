import { ROOT_CONTEXT, SpanKind, SpanStatusCode, defaultTextMapGetter, defaultTextMapSetter, trace } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, ParentBasedSampler, TraceIdRatioBasedSampler, TracerProvider } from '@opentelemetry/sdk-trace';
import type { Config } from '../../core/config/schema';
import { TRACEPARENT, type Tracing } from '../../core/ports/tracing';

export type NodeTracing = Tracing & {
  /** Exports the spans still buffered, then stops (the process's shutdown). */
  shutdown(): Promise<void>;
};

/**
 * core's Tracing port on the OpenTelemetry SDK: spans batched and exported over OTLP/HTTP
 * (JSON) to tracing.otlp_endpoint. No global provider or context manager is registered: the
 * pipeline hands trace contexts along explicitly (the webhook's `trace`, the record header),
 * so nothing else in the process is instrumented. Undefined when tracing is off.
 */
export const startTracing = (config: Config['tracing'], service: string): NodeTracing | undefined => {
  if (!config.enabled) return undefined;
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ 'service.name': config.service_name || service }),
    // Decided once per webhook at its enqueue span; attempts follow the flag their parent carries.
    sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(config.sample_ratio) }),
    spanProcessors: [new BatchSpanProcessor({ exporter: new OTLPTraceExporter({ url: config.otlp_endpoint }), scheduledDelayMillis: 1000 })],
  });
  const tracer = provider.getTracer('howk');
  const propagator = new W3CTraceContextPropagator();
  return {
    outbound: config.outbound_traceparent,
    start(name, kind, parent, attributes) {
      const ctx = parent ? propagator.extract(ROOT_CONTEXT, { [TRACEPARENT]: parent }, defaultTextMapGetter) : ROOT_CONTEXT;
      const span = tracer.startSpan(name, { kind: kind === 'producer' ? SpanKind.PRODUCER : SpanKind.CLIENT, attributes }, ctx);
      const carrier: Record<string, string> = {};
      propagator.inject(trace.setSpan(ROOT_CONTEXT, span), carrier, defaultTextMapSetter);
      return {
        traceparent: carrier[TRACEPARENT] ?? '',
        end(attrs, error) {
          if (attrs) span.setAttributes(attrs);
          span.setStatus(error === undefined ? { code: SpanStatusCode.OK } : { code: SpanStatusCode.ERROR, message: error });
          span.end();
        },
      };
    },
    shutdown: () => provider.shutdown(),
  };
};
