import { bool, int, num, oneOf, section, str } from './fields';

// What a process tells its operators: metrics, traces, logs.

export const metricsSection = section({
  port: int(
    0,
    "Port on which the process serves GET /metrics (Prometheus text, no API key) besides howk-api's own /metrics route; how howk-worker, howk-scheduler and howk-reconciler --watch are scraped (0 = off)",
    { max: 65535 },
  ),
  host: str('127.0.0.1', 'Interface the metrics port binds to'),
  top_endpoints: int(
    20,
    'Endpoints with a label value of their own on the per-endpoint metrics (circuit state, concurrency limit): the most admitted; the rest are aggregated as endpoint="other"',
    {
      min: 1,
      max: 1000,
    },
  ),
});

export const tracingSection = section({
  enabled: bool(false, 'Export OpenTelemetry traces (OTLP/HTTP): one trace per webhook, from the enqueue to every delivery attempt'),
  otlp_endpoint: str('http://127.0.0.1:4318/v1/traces', 'OTLP/HTTP traces endpoint (JSON encoding) the spans are sent to'),
  sample_ratio: num(1, 'Share of webhooks traced (0-1), decided at enqueue; the worker follows the decision carried by the record', { min: 0, max: 1 }),
  outbound_traceparent: bool(false, "Send the attempt span's W3C traceparent header with each delivery (not signed; a traceparent header of the webhook is replaced)"),
  service_name: str('', 'service.name of the spans (empty: the binary, e.g. howk-api, howk-worker)'),
});

export const logSection = section({
  level: oneOf(['debug', 'info', 'warn', 'error'] as const, 'info', 'Lowest level written'),
});
