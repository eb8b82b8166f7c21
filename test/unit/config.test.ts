import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../core/config/load';
import { formatDuration, parseDuration } from '../../core/config/fields';
import { ValidationError } from '../../core/errors/errors';
import { validationError } from '../helpers/validation-error';

const S = 1000;
const M = 60 * S;
const H = 60 * M;

describe('config defaults', () => {
  const c = loadConfig();

  it('api', () => {
    expect(c.api).toMatchObject({ port: 8080, host: '0.0.0.0', read_timeout: 10 * S, write_timeout: 10 * S, max_request_size: 1 << 20 });
  });

  it('kafka', () => {
    expect(c.kafka).toMatchObject({
      brokers: ['localhost:9092'],
      topics: { pending: 'howk.pending', slow: 'howk.slow', results: 'howk.results', deadletter: 'howk.deadletter', state: 'howk.state', scripts: 'howk.scripts' },
      consumer_group: 'howk-workers',
      retention: 168 * H,
      per_key_parallelism: 1,
    });
  });

  it('redis and delivery', () => {
    expect(c.redis).toMatchObject({ addr: 'localhost:6379', db: 0 });
    expect(c.redis.url).toBeUndefined();
    expect(c.redis.password).toBeUndefined();
    expect(c.delivery).toMatchObject({ timeout: 30 * S, max_conns_per_host: 64 });
  });

  it('retry', () => {
    expect(c.retry).toMatchObject({ base_delay: 10_000, max_delay: 24 * H, max_attempts: 20, jitter: 0.2, retry_on_status: [] });
  });

  it('circuit breaker', () => {
    expect(c.circuit_breaker).toEqual({ enabled: true, failure_threshold: 5, failure_window: 60 * S, recovery_timeout: 5 * M, probe_interval: 60 * S, success_threshold: 2 });
  });

  it('concurrency (penalty box)', () => {
    expect(c.concurrency).toEqual({
      max_inflight_per_endpoint: 50,
      inflight_ttl: 4 * S,
      slow_lane_rate: 200,
      max_inflight_per_domain: 0,
      domain_overrides: {},
      initial_limit: 20,
      min_limit: 1,
      max_limit: 1000,
      latency_tolerance: 2,
      slow_threshold: 1 * S,
      latency_window: 30 * S,
    });
  });

  it('scheduler', () => {
    expect(c.scheduler).toMatchObject({ poll_interval: 1 * S, batch_size: 500, lease: 5 * S, shard_lease: 3 * S });
  });

  it('ttl', () => {
    expect(c.ttl).toEqual({ circuit_state_ttl: 24 * H, status_ttl: 168 * H, stats_ttl: 48 * H, idempotency_ttl: 24 * H, retry_data_ttl: 168 * H });
  });

  it('signing', () => {
    expect(c.signing).toMatchObject({ scheme: 'standard', secrets_key_id: 'k1' });
    expect(c.signing.secrets_key).toBeUndefined();
    expect(c.signing.default_secret).toBeUndefined();
  });

  it('an empty YAML document and empty env values give the defaults', () => {
    expect(loadConfig({ yaml: '', env: { HOWK_API_PORT: '' } })).toEqual(c);
    expect(loadConfig({ yaml: '# nothing\n' })).toEqual(c);
  });
});

describe('config precedence: defaults < YAML < env < overrides', () => {
  const yaml = 'api:\n  port: 9000\n  host: 127.0.0.1\nretry:\n  max_attempts: 7\n';

  it('YAML beats the defaults and leaves other keys alone', () => {
    const c = loadConfig({ yaml });
    expect(c.api.port).toBe(9000);
    expect(c.api.host).toBe('127.0.0.1');
    expect(c.retry.max_attempts).toBe(7);
    expect(c.retry.base_delay).toBe(10_000);
  });

  it('env beats YAML, key by key', () => {
    const c = loadConfig({ yaml, env: { HOWK_API_PORT: '9100', HOWK_RETRY_BASE_DELAY: '3s', UNRELATED: 'x' } });
    expect(c.api.port).toBe(9100);
    expect(c.api.host).toBe('127.0.0.1');
    expect(c.retry.max_attempts).toBe(7);
    expect(c.retry.base_delay).toBe(3000);
  });

  it('overrides beat env', () => {
    const c = loadConfig({ yaml, env: { HOWK_API_PORT: '9100' }, overrides: { 'api.port': 9200, 'retry.max_attempts': undefined } });
    expect(c.api.port).toBe(9200);
    expect(c.retry.max_attempts).toBe(7); // an undefined override changes nothing
  });

  it('overrides alone beat the defaults, nested keys included', () => {
    const c = loadConfig({ overrides: { 'kafka.topics.pending': 'p2', 'retry.max_delay': '1h' } });
    expect(c.kafka.topics.pending).toBe('p2');
    expect(c.kafka.topics.slow).toBe('howk.slow');
    expect(c.retry.max_delay).toBe(H);
  });
});

describe('durations', () => {
  it.each([
    ['10s', 10_000],
    ['2m', 120_000],
    ['168h', 604_800_000],
    ['1h30m', 5_400_000],
    ['250ms', 250],
    ['1m30s', 90_000],
    ['1.5s', 1500],
    ['2d', 172_800_000],
    ['1h0m5s10ms', 3_605_010],
    [' 5s ', 5000],
    ['1500', 1500],
  ])('parseDuration(%j) = %i ms', (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });

  it('takes numbers as milliseconds', () => {
    expect(parseDuration(1500)).toBe(1500);
  });

  it.each(['', 's', '10', '10x', '10 s', '1h 30m', 'abc', '-5s', '1m30', 'h1'])('parseDuration(%j) throws unless it is a plain number', (text) => {
    if (text === '10') expect(parseDuration(text)).toBe(10);
    else expect(() => parseDuration(text)).toThrow();
  });

  it.each([
    [86_400_000, '1d'],
    [3_600_000, '1h'],
    [5_400_000, '90m'],
    [10_000, '10s'],
    [250, '250ms'],
    [1500, '1500ms'],
  ])('formatDuration(%i) = %s and reads back', (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
    expect(parseDuration(text)).toBe(ms);
  });

  it('reads durations from YAML strings, YAML numbers (ms) and env', () => {
    const c = loadConfig({ yaml: 'retry:\n  base_delay: 1h30m\n  max_delay: 90000\n', env: { HOWK_SCHEDULER_POLL_INTERVAL: '250ms', HOWK_TTL_STATUS_TTL: '2000' } });
    expect(c.retry.base_delay).toBe(5_400_000);
    expect(c.retry.max_delay).toBe(90_000);
    expect(c.scheduler.poll_interval).toBe(250);
    expect(c.ttl.status_ttl).toBe(2000);
  });
});

describe('Lua worker threads', () => {
  it('defaults to 4 threads and a 500 ms hard-stop margin, both settable from env; 0 threads is refused', () => {
    expect(loadConfig({}).lua).toMatchObject({ threads: 4, hard_stop_margin: 500 });
    expect(loadConfig({ env: { HOWK_LUA_THREADS: '2', HOWK_LUA_HARD_STOP_MARGIN: '250ms' } }).lua).toMatchObject({ threads: 2, hard_stop_margin: 250 });
    expect(() => loadConfig({ env: { HOWK_LUA_THREADS: '0' } })).toThrow(/lua\.threads/);
  });
});

describe('lists and maps from env', () => {
  it('splits comma-separated brokers and drops blanks', () => {
    const c = loadConfig({ env: { HOWK_KAFKA_BROKERS: 'k1:9092, k2:9093,,k3:9094 ' } });
    expect(c.kafka.brokers).toEqual(['k1:9092', 'k2:9093', 'k3:9094']);
  });

  it('reads a YAML list of brokers', () => {
    expect(loadConfig({ yaml: 'kafka:\n  brokers:\n    - a:1\n    - b:2\n' }).kafka.brokers).toEqual(['a:1', 'b:2']);
  });

  it('reads integer lists', () => {
    expect(loadConfig({ env: { HOWK_RETRY_RETRY_ON_STATUS: '409, 425' } }).retry.retry_on_status).toEqual([409, 425]);
  });

  it('reads a map as JSON', () => {
    const c = loadConfig({ env: { HOWK_CONCURRENCY_DOMAIN_OVERRIDES: '{"api.stripe.com": 200, "hooks.slack.com": 30}' } });
    expect(c.concurrency.domain_overrides).toEqual({ 'api.stripe.com': 200, 'hooks.slack.com': 30 });
  });

  it('reads a map as a:1,b:2', () => {
    const c = loadConfig({ env: { HOWK_CONCURRENCY_DOMAIN_OVERRIDES: 'a.example:1, b.example : 2' } });
    expect(c.concurrency.domain_overrides).toEqual({ 'a.example': 1, 'b.example': 2 });
  });
});

describe('bad values are a ValidationError naming the key', () => {
  it.each([
    [{ HOWK_API_PORT: 'abc' }, 'api.port'],
    [{ HOWK_API_PORT: '70000' }, 'api.port'],
    [{ HOWK_API_PORT: '80.5' }, 'api.port'],
    [{ HOWK_RETRY_MAX_ATTEMPTS: '0' }, 'retry.max_attempts'],
    [{ HOWK_RETRY_JITTER: '1.5' }, 'retry.jitter'],
    [{ HOWK_RETRY_BASE_DELAY: '10 parsecs' }, 'retry.base_delay'],
    [{ HOWK_RETRY_BASE_DELAY: '-5s' }, 'retry.base_delay'],
    [{ HOWK_SIGNING_SCHEME: 'hmac' }, 'signing.scheme'],
    [{ HOWK_LOG_LEVEL: 'verbose' }, 'log.level'],
    [{ HOWK_CONCURRENCY_DOMAIN_OVERRIDES: '{not json' }, 'concurrency.domain_overrides'],
    [{ HOWK_CONCURRENCY_DOMAIN_OVERRIDES: 'a.example:-1' }, 'concurrency.domain_overrides'],
    [{ HOWK_RETRY_RETRY_ON_STATUS: '409,abc' }, 'retry.retry_on_status'],
  ])('env %j → %s', (env, key) => {
    const e = validationError(() => loadConfig({ env }));
    expect(e.field?.startsWith(key)).toBe(true);
    // The message names the key or its env variable.
    const envName = Object.keys(env)[0]!;
    expect(e.message.includes(key) || e.message.includes(envName)).toBe(true);
  });

  it.each([
    ['api:\n  port: -1\n', 'api.port'],
    ['retry:\n  max_attempts: 0\n', 'retry.max_attempts'],
    ['retry:\n  base_delay: forever\n', 'retry.base_delay'],
    ['kafka:\n  brokers: 5\n', 'kafka.brokers'],
    ['worker:\n  lanes: sideways\n', 'worker.lanes'],
  ])('YAML %j → %s', (yaml, key) => {
    const e = validationError(() => loadConfig({ yaml }));
    expect(e.field).toBe(key);
    expect(e.issues.map((i) => i.path)).toContain(key);
  });

  it('names the key of a bad override', () => {
    expect(validationError(() => loadConfig({ overrides: { 'circuit_breaker.failure_threshold': 0 } })).field).toBe('circuit_breaker.failure_threshold');
  });

  it('reports every bad key, not just the first', () => {
    const e = validationError(() => loadConfig({ env: { HOWK_API_PORT: 'x', HOWK_RETRY_JITTER: '9' } }));
    expect(e.issues.map((i) => i.path).sort()).toEqual(['api.port', 'retry.jitter']);
  });
});

describe('booleans from env', () => {
  it.each(['true', 'TRUE', '1', 'yes', 'on'])('%j is true', (v) => {
    expect(loadConfig({ env: { HOWK_WORKER_DRY_RUN: v } }).worker.dry_run).toBe(true);
  });

  it.each(['false', '0', 'no', 'off'])('%j is false', (v) => {
    expect(loadConfig({ env: { HOWK_CIRCUIT_BREAKER_ENABLED: v } }).circuit_breaker.enabled).toBe(false);
  });

  // Regression: bool() used to read every word other than 1/true/yes/on as false, so a typo
  // such as HOWK_CIRCUIT_BREAKER_ENABLED=ture silently turned the circuit breaker off.
  // Fixed in 0b9bfd6: unknown words stay strings and fail validation.
  it.each(['ture', 'maybe', 'enabled'])('%j is a ValidationError naming circuit_breaker.enabled', (v) => {
    const e = validationError(() => loadConfig({ env: { HOWK_CIRCUIT_BREAKER_ENABLED: v } }));
    expect(e.field).toBe('circuit_breaker.enabled');
  });
});

describe('signing.default_secret', () => {
  it('refuses a whsec_ secret that cannot sign, naming the field', () => {
    for (const secret of ['whsec_AA', 'whsec_!!!!']) {
      const e = (() => {
        try {
          loadConfig({ env: { HOWK_SIGNING_DEFAULT_SECRET: secret } });
        } catch (err) {
          return err;
        }
      })();
      expect(e).toBeInstanceOf(ValidationError);
      expect((e as ValidationError).field).toBe('signing.default_secret');
      expect((e as Error).message).not.toContain(secret);
    }
  });

  it('accepts a 16-byte whsec_ secret and a raw one', () => {
    expect(loadConfig({ env: { HOWK_SIGNING_DEFAULT_SECRET: `whsec_${Buffer.alloc(16, 3).toString('base64')}` } }).signing.default_secret).toMatch(/^whsec_/);
    expect(loadConfig({ env: { HOWK_SIGNING_DEFAULT_SECRET: 'a raw secret' } }).signing.default_secret).toBe('a raw secret');
  });
});
