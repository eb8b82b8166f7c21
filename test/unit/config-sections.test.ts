import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig, loadConfigWithSources } from '../../core/config/load';
import { clusterKeys, keys } from '../../core/domain/keys';
import { admissionOf, edgeConfigFrom, edgeKeysOf } from '../../edge/config';
import { bridgeSettings } from '../../workers/bridge/config';
import { loadProcessConfig } from '../../workers/node/config';
import { validationError as refusal } from '../helpers/validation-error';

// The one config root: howk-bridge's and the edge's settings are sections of the schema,
// read by the same file and env rules as every other key; unknown and removed keys are
// refused; the loader says which keys the user set.

describe('bridge.* and edge.* are sections of the one config', () => {
  it('defaults', () => {
    const c = loadConfig({ env: {} });
    expect(c.bridge).toMatchObject({ port: 8090, host: '127.0.0.1', kafka_username: 'howk', topics: [], produce_timeout: 1200, max_request_size: 8 << 20 });
    expect(c.bridge.kafka_password).toBeUndefined();
    expect(c.edge).toMatchObject({
      kafka_rest_url: '',
      admission_rate: 100,
      admission_burst: 200,
      domain_rates: {},
      batch_max_records: 500,
      batch_linger: 5,
      produce_deadline: 1500,
      retry_after: 2,
    });
  });

  it('are read from HOWK_BRIDGE_* and HOWK_EDGE_*, lists and maps included', () => {
    const c = loadConfig({
      env: {
        HOWK_BRIDGE_PORT: '9001',
        HOWK_BRIDGE_TOPICS: 'a.pending, a.slow',
        HOWK_BRIDGE_PRODUCE_TIMEOUT: '900ms',
        HOWK_EDGE_ADMISSION_RATE: '5',
        HOWK_EDGE_DOMAIN_RATES: '{"api.stripe.com":{"rate":500,"burst":900}}',
        HOWK_EDGE_BATCH_LINGER: '7ms',
      },
    });
    expect(c.bridge).toMatchObject({ port: 9001, topics: ['a.pending', 'a.slow'], produce_timeout: 900 });
    expect(c.edge).toMatchObject({ admission_rate: 5, batch_linger: 7, domain_rates: { 'api.stripe.com': { rate: 500, burst: 900 } } });
  });

  it('are read from the config file, and the environment beats the file key by key', () => {
    const yaml = [
      'bridge:',
      '  port: 9002',
      '  redis_commands: [get, set]',
      'edge:',
      '  batch_linger: 9ms',
      '  domain_rates:',
      '    hooks.example.com: { rate: 1, burst: 2 }',
      '',
    ].join('\n');
    const c = loadConfig({ yaml, env: { HOWK_BRIDGE_PORT: '9003' } });
    expect(c.bridge.port).toBe(9003);
    expect(c.bridge.redis_commands).toEqual(['get', 'set']);
    expect(c.edge.batch_linger).toBe(9);
    expect(admissionOf(c.edge, 'hooks.example.com')).toEqual({ rate: 1, burst: 2 });
    expect(admissionOf(c.edge, 'other.example')).toEqual({ rate: 100, burst: 200 });
  });

  it('a bad bridge or edge value names the key and the variable it came from', () => {
    const e = refusal(() => loadConfig({ env: { HOWK_EDGE_BATCH_MAX_RECORDS: '0' } }));
    expect(e.field).toBe('edge.batch_max_records');
    expect(e.message).toContain('edge.batch_max_records (HOWK_EDGE_BATCH_MAX_RECORDS)');
    expect(refusal(() => loadConfig({ yaml: 'bridge:\n  port: 70000\n' })).field).toBe('bridge.port');
    expect(refusal(() => loadConfig({ env: { HOWK_EDGE_DOMAIN_RATES: '{"a.example":{"rate":1}}' } })).field).toBe('edge.domain_rates.a.example.burst');
  });

  it('howk-bridge requires its credentials, naming the variable, one per route, and defaults its topics to the pending, slow and state topics', () => {
    expect(refusal(() => bridgeSettings(loadConfig({ env: { HOWK_BRIDGE_REDIS_TOKEN: 't' } }))).message).toContain('HOWK_BRIDGE_KAFKA_PASSWORD');
    expect(refusal(() => bridgeSettings(loadConfig({ env: { HOWK_BRIDGE_KAFKA_PASSWORD: 'p' } }))).message).toContain('HOWK_BRIDGE_REDIS_TOKEN');
    const creds = { HOWK_BRIDGE_KAFKA_PASSWORD: 'p', HOWK_BRIDGE_REDIS_TOKEN: 't' };
    expect(
      bridgeSettings(loadConfig({ env: { ...creds, HOWK_KAFKA_TOPICS_PENDING: 'x.pending', HOWK_KAFKA_TOPICS_SLOW: 'x.slow', HOWK_KAFKA_TOPICS_STATE: 'x.state' } })).topics,
    ).toEqual(['x.pending', 'x.slow', 'x.state']);
    expect(refusal(() => bridgeSettings(loadConfig({ env: { HOWK_BRIDGE_KAFKA_PASSWORD: 'same', HOWK_BRIDGE_REDIS_TOKEN: 'same' } }))).field).toBe('bridge.redis_token');
    expect(bridgeSettings(loadConfig({ yaml: 'bridge:\n  kafka_password: p\n  redis_token: t\n  topics: [only]\n' })).topics).toEqual(['only']);
  });
});

describe('the edge reads its Worker bindings with the same parser', () => {
  const required = { HOWK_EDGE_KAFKA_REST_URL: 'http://b/kafka', HOWK_EDGE_KAFKA_REST_PASSWORD: 'p' };

  it('reads shared and edge settings, takes number and boolean vars as their text, and skips object bindings', () => {
    const { config, edge } = edgeConfigFrom({ ...required, GATE: {}, HOWK_KAFKA_TOPICS_PENDING: 'e.pending', HOWK_EDGE_ADMISSION_RATE: 50, HOWK_API_AUTH_ENABLED: false });
    expect(config.kafka.topics.pending).toBe('e.pending');
    expect(edge.admission_rate).toBe(50);
    expect(config.api.auth.enabled).toBe(false);
    expect(edge).toBe(config.edge);
  });

  it("builds the fleet's cluster key names when HOWK_EDGE_REDIS_CLUSTER or the fleet's HOWK_REDIS_CLUSTER_NODES is set, else the single-Redis ones", () => {
    expect(edgeKeysOf(edgeConfigFrom(required).config)).toBe(keys);
    expect(edgeKeysOf(edgeConfigFrom({ ...required, HOWK_EDGE_REDIS_CLUSTER: 'false' }).config)).toBe(keys);
    expect(edgeKeysOf(edgeConfigFrom({ ...required, HOWK_EDGE_REDIS_CLUSTER: true }).config)).toBe(clusterKeys);
    expect(edgeKeysOf(edgeConfigFrom({ ...required, HOWK_REDIS_CLUSTER_NODES: 'r1:6379,r2:6379' }).config)).toBe(clusterKeys);
    expect(edgeKeysOf(edgeConfigFrom({ ...required, HOWK_EDGE_REDIS_CLUSTER: 'true' }).config).status('wh_1')).toBe('status:{wh_1}');
    expect(refusal(() => edgeConfigFrom({ ...required, HOWK_EDGE_REDIS_CLUSTER: 'maybe' })).message).toContain('HOWK_EDGE_REDIS_CLUSTER');
  });

  it('the former HOWK_KAFKA_REST_* / HOWK_REDIS_REST_* names still work', () => {
    const { edge } = edgeConfigFrom({
      HOWK_KAFKA_REST_URL: 'http://old/kafka',
      HOWK_KAFKA_REST_USERNAME: 'u',
      HOWK_KAFKA_REST_PASSWORD: 'p',
      HOWK_REDIS_REST_URL: 'http://old/redis',
      HOWK_REDIS_REST_TOKEN: 't',
    });
    expect(edge).toMatchObject({
      kafka_rest_url: 'http://old/kafka',
      kafka_rest_username: 'u',
      kafka_rest_password: 'p',
      redis_rest_url: 'http://old/redis',
      redis_rest_token: 't',
    });
  });

  it('the canonical and the former name may both be set alike; set differently they are refused, naming both', () => {
    expect(edgeConfigFrom({ ...required, HOWK_KAFKA_REST_URL: 'http://b/kafka' }).edge.kafka_rest_url).toBe('http://b/kafka');
    const e = refusal(() => edgeConfigFrom({ ...required, HOWK_KAFKA_REST_URL: 'http://elsewhere/kafka' }));
    expect(e.field).toBe('edge.kafka_rest_url');
    expect(e.message).toContain('HOWK_EDGE_KAFKA_REST_URL and HOWK_KAFKA_REST_URL');
  });

  it('refuses to start without the Kafka REST endpoint, naming the canonical variable', () => {
    expect(refusal(() => edgeConfigFrom({})).message).toContain('HOWK_EDGE_KAFKA_REST_URL');
    expect(refusal(() => edgeConfigFrom({ HOWK_EDGE_KAFKA_REST_URL: 'http://b' })).message).toContain('HOWK_EDGE_KAFKA_REST_PASSWORD');
  });

  it('a mistyped edge variable is refused; Worker secrets a transformer names are not judged', () => {
    expect(refusal(() => edgeConfigFrom({ ...required, HOWK_EDGE_ADMISION_RATE: '5' })).message).toContain('HOWK_EDGE_ADMISION_RATE is not a setting');
    expect(() => edgeConfigFrom({ ...required, HOWK_EDGE_GITHUB_SECRET: 's' }, ['HOWK_EDGE_GITHUB_SECRET'])).not.toThrow();
  });
});

describe('keys that are no setting are refused with their name', () => {
  it.each([
    ['redis:\n  pool_size: 10\n', 'redis.pool_size', /no pool to size/],
    ['delivery:\n  max_idle_conns: 10\n', 'delivery.max_idle_conns', /delivery\.max_conns_per_host/],
  ])('removed key in the file %j', (yaml, key, why) => {
    const e = refusal(() => loadConfig({ yaml }));
    expect(e.field).toBe(key);
    expect(e.message).toContain(`${key} is removed`);
    expect(e.message).toMatch(why);
  });

  it.each([
    ['HOWK_REDIS_POOL_SIZE', 'redis.pool_size'],
    ['HOWK_DELIVERY_MAX_IDLE_CONNS', 'delivery.max_idle_conns'],
  ])('removed key in the environment %s', (name, key) => {
    const e = refusal(() => loadConfig({ env: { [name]: '10' } }));
    expect(e.field).toBe(key);
    expect(e.message).toContain(`${name} (${key}) is removed`);
  });

  it.each([
    ['retry:\n  max_atempts: 3\n', 'retry.max_atempts'],
    ['retyr:\n  max_attempts: 3\n', 'retyr'],
    ['api:\n  auth:\n    enable: false\n', 'api.auth.enable'],
    ['edge:\n  admision_rate: 5\n', 'edge.admision_rate'],
  ])('unknown key in the file %j', (yaml, key) => {
    const e = refusal(() => loadConfig({ yaml }));
    expect(e.field).toBe(key);
    expect(e.message).toContain(`${key} is not a setting`);
  });

  it('reports every unknown key of a file at once', () => {
    expect(refusal(() => loadConfig({ yaml: 'retry:\n  max_atempts: 3\nbridge:\n  prot: 1\n' })).issues.map((i) => i.path)).toEqual(['retry.max_atempts', 'bridge.prot']);
  });

  it('a file that is not a mapping of sections is refused', () => {
    expect(refusal(() => loadConfig({ yaml: '- api\n' })).message).toContain('mapping of sections');
  });

  it('an unknown HOWK_<SECTION>_* variable is refused with its name', () => {
    const e = refusal(() => loadConfig({ env: { HOWK_RETRY_MAX_ATEMPTS: '3' } }));
    expect(e.message).toContain('HOWK_RETRY_MAX_ATEMPTS is not a setting');
    expect(e.field).toBe('retry.max_atempts');
    expect(refusal(() => loadConfig({ env: { HOWK_BRIDGE_PROT: '1' } })).message).toContain('HOWK_BRIDGE_PROT is not a setting');
  });

  it('variables that are not settings are left alone: other prefixes, Lua credential keys, allow-listed template variables', () => {
    const env = {
      HOWK_CHAOS_PROFILE: 'full',
      HOWK_LOG4J_VERSION: '2',
      HOWK_LUA_CRYPTO_K1: 'a2V5',
      HOWK_API_PARTNER_TOKEN: 'x',
      HOWK_LUA_SECRET_ENV_ALLOWLIST: 'HOWK_API_PARTNER_TOKEN',
      HOWK_API_PORT: '',
    };
    expect(loadConfig({ env }).lua.secret_env_allowlist).toEqual(['HOWK_API_PARTNER_TOKEN']);
    expect(refusal(() => loadConfig({ env: { HOWK_API_PARTNER_TOKEN: 'x' } })).message).toContain('HOWK_API_PARTNER_TOKEN is not a setting');
  });

  it('an override of a key that does not exist is refused', () => {
    expect(refusal(() => loadConfig({ overrides: { 'api.prot': 1 } })).field).toBe('api.prot');
    expect(loadConfig({ overrides: { 'kafka.topics': { state: 's.state' } } }).kafka.topics).toMatchObject({ state: 's.state', pending: 'howk.pending' });
  });
});

describe('the loader reports which keys the user set', () => {
  it('nothing set: no sources', () => {
    expect(loadConfigWithSources({ env: { HOWK_API_PORT: '', UNRELATED: 'x' } }).sources).toEqual({});
  });

  it('each key set by the file, the environment or a flag, the later source winning; a default value written out counts as set', () => {
    const yaml = 'api:\n  port: 9000\n  auth:\n    enabled: true\nbridge:\n  host: 0.0.0.0\n';
    const { config, sources } = loadConfigWithSources({
      yaml,
      env: { HOWK_API_PORT: '9100', HOWK_DELIVERY_ALLOWED_NETWORKS: '10.0.0.0/8', HOWK_KAFKA_REST_URL: 'http://b', HOWK_HOME: '/x' },
      overrides: { 'worker.dry_run': true, 'kafka.topics': { pending: 'p' } },
    });
    expect(config.api.auth.enabled).toBe(true);
    expect(sources).toEqual({
      'api.port': 'env',
      'api.auth.enabled': 'file',
      'bridge.host': 'file',
      'delivery.allowed_networks': 'env',
      'edge.kafka_rest_url': 'env',
      'worker.dry_run': 'flag',
      'kafka.topics.pending': 'flag',
    });
  });

  it('loadProcessConfig reads --config and the environment and reports the same way', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'howk-config-'));
    try {
      const file = join(dir, 'howk.yaml');
      await writeFile(file, 'delivery:\n  allowed_networks: []\n');
      const { config, sources } = loadProcessConfig({ config: file, port: '8123' }, { HOWK_API_AUTH_ENABLED: 'false' });
      expect(config.api.port).toBe(8123);
      expect(sources).toEqual({ 'delivery.allowed_networks': 'file', 'api.auth.enabled': 'env', 'api.port': 'flag' });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
