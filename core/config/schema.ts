import { z } from 'zod';
import { bridgeSection } from './bridge';
import { edgeSection } from './edge';
import { logSection, metricsSection, tracingSection } from './observability';
import { signingSection } from './signing';
import { checkReplication, replicationKnobs } from './kafka-replication';
import { redisSection } from './redis';
import { degradedSection } from './degraded';
import { svixSection } from './svix';
import { bool, duration, int, intList, intMap, list, listMap, num, oneOf, section, str, strMap } from './fields';

/**
 * The one configuration schema, defaults included. Every leaf is settable from YAML (`--config`)
 * and from `HOWK_<SECTION>_<KEY>` (or the env name given). docs/CONFIG.md is generated from it.
 */
const ConfigShape = z.object({
  api: section({
    port: int(8080, 'HTTP port of howk-api / howk-dev', { max: 65535 }),
    host: str('0.0.0.0', 'Interface howk-api binds to; howk-dev binds 127.0.0.1 unless this is set (or --host)'),
    read_timeout: duration('10s', 'Time allowed to receive a whole request'),
    write_timeout: duration('10s', 'Added to read_timeout: the idle limit of a connection'),
    max_request_size: int(1_048_576, 'Largest request body in bytes (413 above)', { min: 1024 }),
    max_batch_size: int(100, 'Most webhooks in one batch enqueue', { min: 1, max: 10_000 }),
    max_endpoint_length: int(2048, 'Longest endpoint URL', { min: 16 }),
    max_headers: int(50, 'Most custom headers on one webhook', { min: 0 }),
    max_header_value_length: int(4096, 'Longest custom header value', { min: 1 }),
    max_idempotency_key_length: int(256, 'Longest idempotency_key', { min: 1 }),
    produce_linger: duration('0ms', 'How long howk-api gathers concurrent enqueues into one Kafka produce; 0: no wait, enqueues read in one event-loop turn share one'),
    status_linger: duration(
      '50ms',
      "How long howk-api gathers the 'pending' statuses and enqueue counts of accepted webhooks into one Redis write, which the answer no longer waits for; the instance that accepted a webhook shows its status at once, others within this time. 0: written before each answer",
    ),
    max_request_headers: int(100, 'Most HTTP headers on one API request (431 above)', { min: 8 }),
    max_request_header_bytes: int(16_384, 'Largest total of header names and values on one API request, in bytes (431 above)', { min: 1024, max: 65_536 }),
    trust_forwarded_for: bool(
      false,
      'Take the client address of per-client limits (/incoming auth) from the last X-Forwarded-For entry; only behind a proxy that appends it, as anyone can send the header',
    ),
    allowed_hosts: list(
      [],
      'Host header values this server answers (host or host:port, e.g. api.example.com,localhost); others get 421 host_not_allowed, which stops DNS rebinding. An IP address as Host always passes. Empty = any; howk-dev bound to a loopback address defaults to localhost,127.0.0.1,[::1] (any port)',
    ),
    allowed_origins: list(
      [],
      "Browser origins (https://console.example.com) allowed to POST/PUT/DELETE besides the server's own; any other origin, or a Sec-Fetch-Site of cross-site or same-site, gets 403 cross_origin_refused",
    ),
    max_inflight_requests: int(
      10_000,
      'Requests an api instance handles at once (health, readiness and metrics excepted); past it, 503 + Retry-After and nothing is recorded (0 = no limit)',
    ),
    max_outstanding_per_config: int(
      0,
      'Webhooks of one config accepted and not yet terminal (pending or retrying) past which its enqueues answer 429 + Retry-After (0 = no bound)',
    ),
    outstanding_overrides: intMap('Per-config bounds of outstanding webhooks in place of max_outstanding_per_config (0 = no bound for that config), e.g. {"tenant-a": 50000}'),
    sync_max_wait: duration('10s', 'Longest an enqueue may wait for the first attempt (?wait=, Prefer: wait=); a longer wait is cut to this'),
    sync_max_waiting: int(1000, 'Enqueue requests waiting for a first attempt at once per api instance; past it, a request asking to wait is answered at once (Howk-Wait: busy)'),
    sync_max_waiting_per_config: int(
      100,
      "One config's share of sync_max_waiting: its enqueue requests waiting at once per api instance; past it, its requests asking to wait are answered at once (Howk-Wait: busy)",
      { min: 1 },
    ),
    events: section({
      max_subscribers: int(100, 'Most GET /webhooks/events streams open at once on one api process (503 above)', { min: 1 }),
      max_per_config: int(10, "One config's share of max_subscribers: its streams open at once on one api process (429 + Retry-After above)", { min: 1 }),
      max_lifetime: duration('15m', "Longest one event stream lasts: the server then ends it and the browser's EventSource reconnects (retry: 3000)"),
      poll_interval: duration('1s', 'How often the one shared poll behind GET /webhooks/events reads the listing of each watched config'),
      heartbeat: duration('15s', 'Comment sent on an event stream when nothing changed for this long'),
    }),
    bulk_replay: section({
      max_running: int(4, 'Bulk replay jobs (POST /deadletter/replay) running at once on one api process (409 too_many_jobs above)', { min: 1 }),
      max_running_per_config: int(2, "One config's share of max_running: its jobs running at once (409 too_many_jobs above)", { min: 1 }),
      max_kept_per_config: int(20, "Jobs of one config remembered (running or finished) for GET /deadletter/replay/:job; a new job forgets that config's oldest finished job", {
        min: 1,
      }),
    }),
    auth: section({
      enabled: bool(true, 'Require an API key (Authorization: Bearer) on every route but health; howk-dev defaults to false'),
      rate_limit: num(1000, 'Requests per second per API key (token bucket per api instance; 0 = no limit)'),
      rate_burst: int(2000, 'Requests a key may make at once before rate_limit applies', { min: 1 }),
    }),
  }),
  svix: svixSection,
  kafka: section({
    brokers: list(['localhost:9092'], 'Kafka bootstrap brokers (comma-separated in env)'),
    client_id: str('howk', 'Kafka client id prefix'),
    topics: section({
      pending: str('howk.pending', 'Fast-lane topic'),
      slow: str('howk.slow', 'Slow-lane (penalty box) topic'),
      results: str('howk.results', 'One record per delivery attempt'),
      deadletter: str('howk.deadletter', 'Terminal failures'),
      state: str('howk.state', 'Compacted recoverable state'),
      scripts: str('howk.scripts', 'Compacted Lua scripts'),
      keys: str('howk.keys', 'Compacted API key records (hashes only); every api instance replays it'),
      config_secrets: str('howk.config-secrets', 'Compacted per-config signing secrets (AES-GCM sealed); every api and worker replays it'),
      guards: str('howk.guards', 'Compacted pauses (per endpoint and config) and open circuits, keyed by scope; a Redis rebuild replays it'),
      applications: str('howk.applications', 'Compacted applications, endpoints (secrets AES-GCM sealed) and event types of the Svix API; every api instance replays it'),
      messages: str('howk.messages', 'Messages of the Svix API (retention as the other non-compacted topics); every api instance keeps the latest of each application'),
    }),
    consumer_group: str('howk-workers', 'Consumer group of howk-worker'),
    partitions: int(12, 'Partitions of topics created at start-up', { min: 1 }),
    ...replicationKnobs,
    retention: duration('168h', 'Retention of the non-compacted topics'),
    per_key_parallelism: int(1, 'Webhooks of one config_id in flight at once per worker (1 = strict order)', { min: 1, max: 1000 }),
    produce_timeout: duration('5s', 'Longest wait for a produce acknowledgement before answering 503'),
    max_batch_bytes: int(1_048_576, 'Most bytes fetched per partition per poll', { min: 1024 }),
    max_wait: duration(
      '250ms',
      'Longest broker wait for a fetch that has no record yet (a fetch returns as soon as one record is there, so this only paces idle polling; a lane resumed after a pause is fetched again within it)',
    ),
    fetch_min_bytes: int(
      1,
      'Bytes a fetch waits for (up to max_wait) before the broker answers: 1 answers at the first record; more gathers bigger batches under load at the cost of up to max_wait of latency',
      { min: 1 },
    ),
    commit_interval: duration(
      '100ms',
      'Offsets of the batches that resolve within this long are committed in one request. A crash redelivers at most this much more, and the next owner skips what it finds ended in the statuses; at a light load a commit request per few webhooks cost the worker and the broker more than the deliveries',
    ),
    max_unresolved: int(
      2000,
      'Records a worker consumer has taken and not yet resolved (delivered or handed off, outcomes durable), over all its partitions; past it, it takes no new batch until some resolve',
      { min: 1 },
    ),
    max_batches_in_flight: int(
      4,
      'Batches whose deliveries a worker consumer is still running at which it holds its next fetch (up to 100 ms) until one finishes (0: off); under load the next fetch brings more records, so per-batch work is shared by more webhooks.',
      { min: 0 },
    ),
    session_timeout: duration(
      '3s',
      "Consumer session timeout: how soon the partitions of a worker that died without leaving (kill -9, a lost host) move to the others; heartbeats go every sixth of it (250 ms - 1 s). Brokers refuse one below their group.min.session.timeout.ms (Kafka's default 6 s; Howk's broker scripts set 1 s): a worker then joins with the brokers' minimum and logs it",
    ),
    rebalance_timeout: duration(
      '10s',
      'How long a consumer group waits for its members to rejoin a rebalance before the partitions are handed out without them. A consumer that kafkajs restarts during a broker outage rejoins under its member id and is not waited for; a worker process that restarted meanwhile is a new member, and its old one is waited for this long (a live worker notices a rebalance at its next heartbeat, a sixth of session_timeout, and rejoins once its batches in flight have resolved, for at most 1 s)',
    ),
  }),
  redis: redisSection,
  delivery: section({
    timeout: duration('30s', 'Total time allowed for one delivery attempt'),
    max_conns_per_host: int(
      64,
      "Most connections per origin per worker (keep-alive pool): deliveries on the wire to an origin at once; the pool follows the endpoints' adaptive limits up to it, and webhooks beyond wait in the worker before admission",
      { min: 1 },
    ),
    max_concurrency: int(256, 'Deliveries in flight at once per worker process', { min: 1 }),
    user_agent: str('Howk/0.1', 'User-Agent of outbound requests'),
    response_snippet_bytes: int(1024, 'Bytes of a response body kept for status and dead letters'),
    straggler_after: duration(
      '200ms',
      'A config lane of a batch that makes no progress for this long (a slow delivery) is handed off: the batch commits and its unfinished deliveries finish in the background under a lease',
    ),
    batch_time_limit: duration('2s', 'A batch whose lanes all keep making progress may run this long before its unfinished deliveries are handed off too'),
    handoff_lease: duration(
      '5s',
      'Lease of a delivery finishing in the background (or waiting in its lane behind one), renewed every third of it, at least every second (one Redis call per worker for all its leases): if the worker dies, the scheduler re-enqueues it after this; a worker stalled for two thirds of it may see its delivery made twice',
    ),
    max_handoff: int(5000, 'Most deliveries finishing in the background per worker; past it, batches wait', { min: 0 }),
    recent_outcomes: int(
      20_000,
      'Attempts a worker remembers (webhook id and attempt): a record consumed again (a rewound partition, a consumer restarted after a broker outage, a retry enqueued twice) whose attempt is remembered is not sent again (0: off)',
      { min: 0 },
    ),
    sent_marks: bool(
      true,
      "Right after an endpoint's 2xx, mark the pass in its status hash (one pipelined Redis write per answers that arrive together), before its outcome is written with its batch: a worker killed in between leaves the mark, and the record's next owner writes the delivered outcome instead of sending it again (docs/RELIABILITY.md, Sent marks)",
    ),
    allowed_networks: list([], 'CIDR ranges deliveries may reach although they are not public (SSRF guard), e.g. 10.1.0.0/16,::1/128; howk-dev defaults to loopback'),
  }),
  retry: section({
    base_delay: duration('10s', 'Backoff base: base_delay * 2^min(attempt,10)'),
    max_delay: duration('24h', 'Backoff cap'),
    max_attempts: int(20, 'Attempts before a webhook is exhausted (per-request override allowed)', { min: 1, max: 1000 }),
    jitter: num(0.2, 'Random spread of a backoff delay (±fraction)', { max: 1 }),
    max_deferrals: int(10, '429 + Retry-After deferrals allowed per webhook before they count as failures'),
    max_retry_after: duration('1h', 'Longest Retry-After honoured exactly; longer ones are capped to this'),
    retry_on_status: intList([], '4xx status codes that are retried instead of dead-lettered'),
  }),
  circuit_breaker: section({
    enabled: bool(true, 'Per-endpoint circuit breaker'),
    failure_threshold: int(5, 'Failures within failure_window that open the circuit', { min: 1 }),
    failure_window: duration('60s', 'Window in which failures are counted'),
    recovery_timeout: duration('5m', 'Time OPEN before a probe is allowed'),
    probe_interval: duration('60s', 'At most one probe per interval while HALF_OPEN'),
    success_threshold: int(2, 'Probe successes that close the circuit', { min: 1 }),
  }),
  concurrency: section({
    max_inflight_per_endpoint: int(50, 'Most deliveries of one endpoint in flight in the fast lane: its share of the fast lane, under its adaptive limit (0 = no endpoint limit)'),
    inflight_ttl: duration(
      '4s',
      "Lease of a delivery in flight (at least 3s): its worker renews it every third of it (at least 1 s apart, one call for all) while the delivery runs; a killed worker's deliveries stop counting against their endpoint's and host's limits after this (with 10 s, a kill -9 stalled every delivery to a host at its limit for up to 10 s)",
    ),
    slow_lane_rate: int(200, "Most deliveries per second per endpoint from the slow lane per worker; below it the pace is the endpoint's limit / latency", { min: 1 }),
    max_inflight_per_domain: int(
      0,
      'Ceiling of each host\'s adaptive in-flight limit (0 = no limit); on a Redis Cluster the host\'s fixed limit, kept in two steps (docs/ARCHITECTURE.md, "The per-host limit on a cluster: host first")',
    ),
    domain_overrides: intMap('Per-host ceilings of the in-flight limit, e.g. {"api.stripe.com": 200}'),
    initial_limit: int(20, 'Adaptive in-flight limit of an endpoint (host) never measured', { min: 1 }),
    min_limit: int(1, 'Floor of the adaptive in-flight limits', { min: 1 }),
    max_limit: int(1000, 'Ceiling of the adaptive per-endpoint limit (what the slow lane paces by)', { min: 1 }),
    latency_tolerance: num(2, "Latency up to this many times the endpoint's minimum (+20 ms) lets its limit grow; above it the limit shrinks", { min: 1 }),
    slow_threshold: duration('1s', 'An endpoint at its limit whose recent latency is above this is diverted to the slow lane'),
    latency_window: duration('30s', 'Window of the latency percentiles shown per endpoint; a timeout within it makes the endpoint slow'),
  }),
  degraded: degradedSection,
  rate_limit: section({
    rate: num(0, 'Deliveries per second per endpoint, shared by all workers (0 = no limit); waiting costs no attempt'),
    burst: int(10, 'Deliveries an endpoint may receive at once after being idle', { min: 1 }),
  }),
  scheduler: section({
    poll_interval: duration('1s', 'How often due retries are moved back to the pending topic'),
    batch_size: int(500, 'Most retries moved per poll', { min: 1 }),
    lease: duration('5s', "Lock on claimed retries until their produce is acked: a crashed scheduler's claims reappear after it; a slower produce may repeat a retry"),
    shard_lease: duration(
      '3s',
      "A scheduler's lease on its retry shards (redis.retry_shards), renewed every third of it: a dead scheduler's shards are taken over after it; a scheduler stalled for two thirds of it may share its shards for a while (each claim is atomic)",
    ),
  }),
  reconciler: section({
    enabled: bool(true, 'Workers and schedulers check the canary at start-up and run the sentinel (Redis rebuild from Kafka)'),
    sentinel_interval: duration('30s', 'How often workers and schedulers check that Redis still holds the canary'),
    lock_ttl: duration('60s', 'TTL of the rebuild lock; the holder renews it every third of it'),
    restore_batch: int(500, 'Records restored into Redis per round trip during a rebuild', { min: 1 }),
    restore_delay: duration('30s', 'Restored retries already due wait this long, so copies already on their way (re-enqueued before the loss) arrive first and make them moot'),
    read_idle_timeout: duration('5s', 'A rebuild stops waiting for a partition that yields nothing for this long (its tail was compacted away)'),
    rebuild_timeout: duration('10m', 'A rebuild that takes longer is abandoned (the lock is released) and tried again'),
    orphan_sweep_interval: duration('1m', 'How often schedulers re-read howk.state for due webhooks nothing in Redis carries, and schedule them again (0 = never)'),
    orphan_grace: duration('5m', 'How long past due a webhook must go unscheduled, unleased and not in flight before the orphan sweep acts (raised to a floor)'),
  }),
  ttl: section({
    circuit_state_ttl: duration('24h', 'TTL of circuit breaker state'),
    status_ttl: duration('168h', 'TTL of webhook status records'),
    stats_ttl: duration('48h', 'TTL of hourly stats counters'),
    idempotency_ttl: duration('24h', 'Window in which an idempotency_key returns the first webhook'),
    retry_data_ttl: duration('168h', 'TTL of the stored webhook of a pending retry'),
  }),
  signing: signingSection,
  worker: section({
    lanes: oneOf(['fast', 'slow', 'both'] as const, 'both', 'Which topics this worker consumes'),
    dry_run: bool(false, 'Log deliveries and assume 200 without sending'),
    outcome_linger: duration(
      '20ms',
      'How long the worker gathers outcome records (results, state, dead letters) of its batches into one Kafka produce, and then their statuses into one Redis write: delays when a batch is durable, committed and visible in its status (and a ?wait= answer), never a delivery',
    ),
  }),
  bridge: bridgeSection,
  edge: edgeSection,
  transformer: section({
    script_dirs: list([], 'Directories of /incoming/:name transformers (name.lua, optional name.json and name.passwd); reloaded on SIGHUP'),
    auth_failure_rate: num(
      0.5,
      'Failed Basic-auth checks per second a client address may make on /incoming/:name; over it 429 without a password check (token bucket per api instance; successes give their token back; 0 = no limit)',
    ),
    auth_failure_burst: int(10, 'Failed checks a client address may make at once before auth_failure_rate applies', { min: 1 }),
    auth_failure_rate_per_transformer: num(5, 'Failed Basic-auth checks per second on one transformer, all clients together (token bucket per api instance; 0 = no limit)'),
    auth_failure_burst_per_transformer: int(50, 'Failed checks on one transformer at once before auth_failure_rate_per_transformer applies', { min: 1 }),
    max_concurrent_auth_checks: int(4, 'Password checks (bcrypt: ~100 ms of CPU each) running at once on an api instance; more at once get 503 with Retry-After (0 = no limit)', {
      min: 0,
    }),
  }),
  lua: section({
    timeout: duration('500ms', 'CPU deadline of one Lua script run'),
    memory_limit_mb: int(32, 'Memory cap of one Lua script run, in MB', { min: 1, max: 1024 }),
    max_script_bytes: int(65_536, 'Largest Lua script accepted, in bytes', { min: 64 }),
    threads: int(4, 'Worker threads that run Lua scripts in howk-api, howk-worker and howk-dev (one run per thread at a time; more runs wait for a free thread)', {
      min: 1,
      max: 64,
    }),
    hard_stop_margin: duration(
      '500ms',
      'A run still in Lua this long past its deadline gets its thread terminated and replaced (a C call such as a backtracking pattern cannot be interrupted from inside the VM)',
    ),
    http_allowlist: listMap(
      'Hosts the Lua http module may call, per script namespace: a config id (wh:42 falls back to wh) or incoming:<transformer> (falls back to incoming); "api.example.com" exactly, "*.example.com" for subdomains. Addresses still pass the SSRF guard (delivery.allowed_networks)',
    ),
    http_timeout: duration('5s', 'Longest Lua http call, redirects included (a script may only lower it)'),
    http_max_response_bytes: int(1_048_576, 'Largest response body a Lua http call reads', { min: 1024 }),
    credentials: strMap(
      'Encrypted credentials for crypto.decrypt_credential(name): name → lcred:v2 envelope made by `howk credentials encrypt` (scoped to namespaces and destination hosts); keys come from HOWK_LUA_CRYPTO_<ID>',
    ),
    secret_env_allowlist: list(
      [],
      'Environment variables that ${VAR} templates in _delivery_headers / _delivery_query_params may read at send time; any other name dead-letters the webhook',
    ),
    secret_env_hosts: listMap(
      'Hosts each allow-listed ${VAR} may be sent to: VAR → ["api.partner.com", "*.partner.com"]; a delivery to any other host (or a variable without an entry) dead-letters as secret_host_not_allowed',
    ),
  }),
  metrics: metricsSection,
  tracing: tracingSection,
  log: logSection,
});

/** The schema, with the checks that span sections or leaves (a zod refinement keeps it an object: .shape still walks). */
export const ConfigSchema = ConfigShape.superRefine(checkReplication);

export type Config = z.infer<typeof ConfigSchema>;
