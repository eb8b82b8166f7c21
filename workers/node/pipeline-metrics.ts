import type { Registry } from 'prom-client';
import { OUTCOME_CLASSES, type OutcomeClass, type PipelineEvents } from '../../core/metrics/events';
import { add, counts, cumulative, type Counts } from '../../core/metrics/recorder';
import { circuitValue, createTopEndpoints, type EndpointEntry, type TopEndpoints } from '../../core/metrics/top-n';
import { bounded, bump, customMetric, histogramValues, labelled, type Value } from './prom-custom';

// The pipeline's metric families (docs/OPERATIONS.md, Metrics). Every recording call adds to
// a plain number (a Map lookup at most); the series are built when Prometheus scrapes.

export type PipelineMetrics = {
  /** What core's pipeline is given (core/metrics/events.ts). */
  events: PipelineEvents;
  /** Per-endpoint circuit state and adaptive limits, top-N labelled (core/metrics/top-n.ts). */
  endpoints: TopEndpoints;
  kafkaError(op: string): void;
  redisError(op: string): void;
  /** One Lua run ended: its time and how ('killed': its thread was terminated by the hard stop). */
  luaRun(ms: number, outcome: 'ok' | 'error' | 'killed'): void;
  /** This process rebuilt the hot state from Kafka. */
  rebuilt(): void;
  /** The orphan sweep scheduled again this many webhooks nothing would have attempted (core/reconcile/orphans.ts). */
  orphansRepaired(n: number): void;
  /** A gauge read at scrape time (Redis or Kafka): bounded, a failed read shows no series. */
  probe(name: string, help: string, read: () => Promise<Value[]>): void;
};

const LUA_OUTCOMES = ['ok', 'error', 'killed'] as const;

const endpointSeries = (endpoints: TopEndpoints, now: number): { circuits: Value[]; limits: Value[] } => {
  const { top, rest } = endpoints.split();
  const circuits: Value[] = [];
  const limits: Value[] = [];
  const states = ['closed', 'half_open', 'open'];
  const push = (endpoint: string, es: EndpointEntry[]) => {
    const byState = [0, 0, 0];
    let sum = 0;
    let seen = 0;
    for (const e of es) {
      byState[circuitValue(e, now)]!++;
      if (!Number.isNaN(e.limit)) {
        sum += e.limit;
        seen++;
      }
    }
    states.forEach((state, i) => circuits.push({ metricName: 'howk_circuit_state', labels: { endpoint, state }, value: byState[i]! }));
    if (seen) limits.push({ metricName: 'howk_concurrency_limit', labels: { endpoint }, value: sum / seen });
  };
  for (const [hash, e] of top) push(hash, [e]);
  if (rest.length) push('other', rest);
  return { circuits, limits };
};

/** A counter without labels; the function adds to it. */
const plainCounter = (registry: Registry, name: string, help: string): ((n: number) => void) => {
  let value = 0;
  customMetric(registry, name, help, 'counter', () => [{ metricName: name, labels: {}, value }]);
  return (n) => void (value += n);
};

export const registerPipelineMetrics = (registry: Registry, topN: number): PipelineMetrics => {
  const requests = new Map<string, number>();
  const webhooks = new Map<string, number>([
    ['accepted', 0],
    ['duplicate', 0],
  ]);
  const attemptTimes = new Map<OutcomeClass, Counts>(OUTCOME_CLASSES.map((c) => [c, counts()]));
  const decisions = { delivered: 0, retry: 0, deferred: 0 };
  const dead = new Map<string, number>();
  const kafkaErrors = new Map<string, number>();
  const redisErrors = new Map<string, number>();
  const luaTimes = new Map<string, Counts>(LUA_OUTCOMES.map((o) => [o, counts()]));
  let luaKills = 0;
  const endpoints = createTopEndpoints(topN);

  const reg = (name: string, help: string, type: 'counter' | 'gauge' | 'histogram', read: () => Value[] | Promise<Value[]>) => customMetric(registry, name, help, type, read);
  reg('howk_enqueue_requests_total', 'Enqueue requests answered, by outcome (accepted, rejected) and reason (the error code of a rejection)', 'counter', () =>
    [...requests].map(([k, value]) => {
      const [outcome, reason] = k.split('\u0000') as [string, string];
      return { metricName: 'howk_enqueue_requests_total', labels: { outcome, reason }, value };
    }),
  );
  reg('howk_enqueue_webhooks_total', 'Webhooks of accepted enqueue requests: accepted (new) or duplicate (an idempotency_key seen before)', 'counter', () =>
    labelled('howk_enqueue_webhooks_total', 'outcome', webhooks),
  );
  const classSeries = () => [...attemptTimes].map(([c, h]) => [c, cumulative(h)] as [string, ReturnType<typeof cumulative>]);
  reg(
    'howk_delivery_attempts_total',
    'Delivery attempts, by outcome class of the response (2xx, 3xx, 4xx, 5xx, timeout, network, local: nothing reached the endpoint)',
    'counter',
    () => classSeries().map(([c, h]) => ({ metricName: 'howk_delivery_attempts_total', labels: { class: c }, value: h.count })),
  );
  reg('howk_delivery_seconds', 'Time of one delivery attempt (request sent → response or failure), by outcome class', 'histogram', () =>
    histogramValues('howk_delivery_seconds', 'class', classSeries()),
  );
  reg('howk_delivered_total', 'Webhooks delivered (a 2xx response)', 'counter', () => [{ metricName: 'howk_delivered_total', labels: {}, value: decisions.delivered }]);
  reg('howk_retries_scheduled_total', 'Failed attempts that scheduled a retry (an attempt spent)', 'counter', () => [
    { metricName: 'howk_retries_scheduled_total', labels: {}, value: decisions.retry },
  ]);
  reg('howk_deferrals_total', 'Attempts answered 429 (or 503) with Retry-After: retried later without spending an attempt', 'counter', () => [
    { metricName: 'howk_deferrals_total', labels: {}, value: decisions.deferred },
  ]);
  reg('howk_dead_letters_total', 'Webhooks dead-lettered, by reason_type', 'counter', () => labelled('howk_dead_letters_total', 'reason', dead));
  reg(
    'howk_circuit_state',
    `Endpoints per circuit state (closed, half_open, open), as this process saw them; the top ${topN} endpoints by traffic by endpoint_hash, the rest as endpoint="other"`,
    'gauge',
    () => endpointSeries(endpoints, Date.now()).circuits,
  );
  reg(
    'howk_concurrency_limit',
    `Adaptive concurrency limit of an endpoint as admission last saw it; top ${topN} endpoints by endpoint_hash, endpoint="other" the mean of the rest`,
    'gauge',
    () => endpointSeries(endpoints, Date.now()).limits,
  );
  reg('howk_kafka_errors_total', 'Kafka operations that failed, by op (produce, commit, consumer_crash)', 'counter', () => labelled('howk_kafka_errors_total', 'op', kafkaErrors));
  reg('howk_redis_errors_total', 'Redis commands that failed (unreachable, timed out) and connection errors, by op', 'counter', () =>
    labelled('howk_redis_errors_total', 'op', redisErrors),
  );
  reg('howk_lua_run_seconds', 'Time of one Lua run (delivery script, transformer), by outcome (ok, error, killed)', 'histogram', () =>
    histogramValues(
      'howk_lua_run_seconds',
      'outcome',
      [...luaTimes].map(([o, h]) => [o, cumulative(h)]),
    ),
  );
  reg('howk_lua_kills_total', 'Lua worker threads terminated by the hard stop (a run past its CPU or wall-clock limit)', 'counter', () => [
    { metricName: 'howk_lua_kills_total', labels: {}, value: luaKills },
  ]);
  const rebuilt = plainCounter(registry, 'howk_redis_rebuilds_total', 'Rebuilds of the hot state from Kafka this process ran (the canary was missing, or --force)');
  const repairedHelp = 'Due webhooks nothing in the hot state would have attempted, scheduled again by the orphan sweep (each one a lost retry caught: alert on any increase)';
  const orphansRepaired = plainCounter(registry, 'howk_orphaned_retries_repaired_total', repairedHelp);
  // No label: the message listing (GET /api/v1/app/{app}/msg) shows which application; a label per application would be a series per tenant.
  const unroutedHelp = 'Messages of the Svix API accepted (202) that reached no endpoint: none, all disabled, or none listens to the event type or channels';
  const unrouted = plainCounter(registry, 'howk_svix_messages_unrouted_total', unroutedHelp);

  const events: PipelineEvents = {
    enqueueRequest: (outcome, reason) => bump(requests, `${outcome}\u0000${reason}`),
    enqueued: (outcome, n) => bump(webhooks, outcome, n),
    attempt: (cls, ms) => add(attemptTimes.get(cls)!, ms > 0 ? ms / 1000 : 0, 1),
    decided: (d) => {
      if (d.kind === 'delivered') decisions.delivered++;
      else if (d.kind === 'retry') decisions[d.deferred ? 'deferred' : 'retry']++;
      else bump(dead, d.reason_type);
    },
    deadLettered: (reason) => bump(dead, reason),
    messageUnrouted: () => unrouted(1),
  };
  return {
    events,
    endpoints,
    kafkaError: (op) => bump(kafkaErrors, op),
    redisError: (op) => bump(redisErrors, op),
    luaRun: (ms, outcome) => {
      add(luaTimes.get(outcome)!, ms > 0 ? ms / 1000 : 0, 1);
      if (outcome === 'killed') luaKills++;
    },
    rebuilt: () => rebuilt(1),
    orphansRepaired: (n) => orphansRepaired(n),
    probe: (name, help, read) => reg(name, help, 'gauge', () => bounded(read)),
  };
};
