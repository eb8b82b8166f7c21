import { z } from 'zod';
import { bool, duration, int, num, optStr, section, str } from './fields';

/**
 * `edge.*`: the Cloudflare edge Worker (docs/EDGE.md), read from its Worker vars and secrets
 * like every other key. The REST endpoint settings were named HOWK_KAFKA_REST_* and
 * HOWK_REDIS_REST_* before they joined this section; those names stay accepted.
 */
const DomainRate = z.object({ rate: z.number().min(0), burst: z.number().int().min(1) });

export const edgeSection = section({
  kafka_rest_url: str('', 'Upstash-dialect Kafka REST URL (howk-bridge: http://bridge/kafka); required at the edge', { aliases: ['HOWK_KAFKA_REST_URL'] }),
  kafka_rest_username: str('howk', 'Basic-auth user of the Kafka REST endpoint', { aliases: ['HOWK_KAFKA_REST_USERNAME'] }),
  kafka_rest_password: optStr('Basic-auth password of the Kafka REST endpoint (Worker secret); required at the edge', { aliases: ['HOWK_KAFKA_REST_PASSWORD'], secret: true }),
  redis_rest_url: optStr('Upstash-dialect Redis REST URL (howk-bridge: http://bridge/redis); without it and the token, status reads answer 501', {
    aliases: ['HOWK_REDIS_REST_URL'],
  }),
  bridge_headers: optStr(
    'Headers sent with every request to the Kafka and Redis REST endpoints, as JSON, e.g. the service token of a Cloudflare Access application in front of howk-bridge: {"CF-Access-Client-Id": "…", "CF-Access-Client-Secret": "…"} (Worker secret)',
    { secret: true },
  ),
  redis_rest_token: optStr('Bearer token of the Redis REST endpoint (Worker secret)', { aliases: ['HOWK_REDIS_REST_TOKEN'], secret: true }),
  redis_cluster: bool(
    false,
    'The Redis behind the REST endpoint is a Redis Cluster: the edge builds the fleet\'s cluster key names (hash-tagged, docs/EDGE.md "In front of a Redis Cluster"). Also on when redis.cluster_nodes is set, so the fleet\'s settings copied to the edge are enough',
  ),
  admission_rate: num(100, 'Webhooks per second a destination host takes on howk.pending until the fleet has measured its capacity; the overflow goes to howk.slow (0 = no limit)'),
  admission_burst: int(200, 'Webhooks a destination host takes at once on howk.pending after being idle, until its capacity is measured', { min: 1 }),
  capacity_cache: duration('1s', 'How long a DomainGate reuses the capacity it read from Redis (adaptive limits, latency, circuits, backlog) before reading it again'),
  key_cache: duration(
    '10s',
    'How long the edge reuses an API key record read from the Redis mirror of the key table: a revocation reaches the edge within this time (at most 30s)',
  ),
  key_miss_cache: duration(
    '2s',
    'How long the edge remembers that the key mirror has no record of a key id, so that a repeated unknown id costs one bridge read (key_cache when that is shorter)',
  ),
  key_lookup_rate: num(
    5,
    "Key lookups per second one client (CF-Connecting-IP) may send to the key mirror, for key ids not in the edge's caches; over it 429 + Retry-After (0 = no limit)",
  ),
  key_lookup_burst: int(20, 'Key lookups one client may send to the key mirror at once after being idle', { min: 1 }),
  domain_rates: z
    .record(z.string(), DomainRate)
    .default({})
    .meta({ kind: 'map', description: 'Per-host admission, e.g. {"api.stripe.com": {"rate": 500, "burst": 1000}} (JSON in the environment)' }),
  batch_max_records: int(500, 'A DomainGate flushes its produce buffer at this many records', { min: 1, max: 10_000 }),
  batch_linger: duration('5ms', 'Longest time a record waits in a DomainGate for others to share its produce'),
  batch_max_in_flight: int(2, 'Produces a DomainGate has on the wire before new records wait to share the next one (0: every record waits for batch_linger)', {
    min: 0,
    max: 64,
  }),
  produce_deadline: duration('1500ms', 'Time a produce may take, retries included, before the request answers 503'),
  retry_after: int(2, 'Retry-After (seconds) of a 503 when Kafka cannot be reached', { min: 1 }),
  lua_max_instructions: int(20_000_000, "Lua VM instructions one transformer run may execute (workerd's clock stands still during a run, so this is its CPU limit)", {
    min: 10_000,
  }),
  api_keys: optStr(
    'API key records (JSON array, hashes only) the edge checks tokens against when it has no Redis mirror of the key table (no redis_rest_url); ignored once a mirror is configured (Worker secret)',
    {
      secret: true,
    },
  ),
});
