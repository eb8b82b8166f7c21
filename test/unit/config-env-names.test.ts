import { describe, expect, it } from 'vitest';
import { configDocsTable, configLeaves, loadConfig, type Leaf } from '../../core/config/load';
import { validationError } from '../helpers/validation-error';

// Env names of the config leaves (HOWK_<PATH> and the documented exceptions), each read
// for real, and the docs table generated from the same leaves.

const get = (obj: unknown, path: string[]): unknown => path.reduce<any>((o, k) => (o == null ? undefined : o[k]), obj);

describe('every leaf has a HOWK_* env name that works, and is documented', () => {
  const leaves = configLeaves();
  const defaults = loadConfig();
  // Explicit env names that differ from HOWK_<SECTION>_<KEY>.
  const RENAMED: Record<string, string> = {
    'signing.secrets_key': 'HOWK_SECRETS_KEY',
    'signing.secrets_key_id': 'HOWK_SECRETS_KEY_ID',
    'signing.old_secrets_keys': 'HOWK_SECRETS_OLD_KEYS',
  };

  it('names are HOWK_<PATH> (or the documented exceptions) and unique, former names included', () => {
    for (const l of leaves) {
      const key = l.path.join('.');
      expect(l.env, key).toBe(RENAMED[key] ?? `HOWK_${l.path.join('_').toUpperCase()}`);
      expect(l.meta.description.length, key).toBeGreaterThan(0);
    }
    const names = leaves.flatMap((l) => [l.env, ...l.aliases]);
    expect(new Set(names).size).toBe(names.length);
  });

  it('HOWK_SECRETS_KEY sets signing.secrets_key (and its siblings)', () => {
    const c = loadConfig({ env: { HOWK_SECRETS_KEY: 'a2V5', HOWK_SECRETS_KEY_ID: 'k9', HOWK_SECRETS_OLD_KEYS: 'k1:b2xk' } });
    expect(c.signing.secrets_key).toBe('a2V5');
    expect(c.signing.secrets_key_id).toBe('k9');
    expect(c.signing.old_secrets_keys).toBe('k1:b2xk');
  });

  it('HOWK_SIGNING_SECRETS_KEY, which would read as signing.secrets_key, is refused and points to HOWK_SECRETS_KEY', () => {
    const e = validationError(() => loadConfig({ env: { HOWK_SIGNING_SECRETS_KEY: 'a2V5' } }));
    expect(e.message).toContain('HOWK_SIGNING_SECRETS_KEY is not a setting');
    expect(e.message).toContain('signing.secrets_key is read from HOWK_SECRETS_KEY');
  });

  // A value for the leaf's env that differs from its default, and what it must parse to.
  const sample = (l: Leaf, def: unknown): [string, unknown] => {
    switch (l.meta.kind) {
      case 'int':
        return [String((def as number) + 1), (def as number) + 1];
      case 'int|auto':
        return def === 'auto' ? ['2', 2] : ['auto', 'auto'];
      case 'number':
        return (def as number) === 0 ? ['2.5', 2.5] : [String((def as number) / 2), (def as number) / 2];
      case 'string':
        return [`x-${l.path.join('-')}`, `x-${l.path.join('-')}`];
      case 'bool':
        return [def ? 'false' : 'true', !def];
      case 'duration':
        return [`${(def as number) + 1}ms`, (def as number) + 1];
      case 'list':
        return l.schema.safeParse(['x']).success ? ['a:1, b:2', ['a:1', 'b:2']] : ['401,402', [401, 402]];
      case 'map':
        if (l.schema.safeParse({ a: { rate: 1, burst: 1 } }).success) return ['{"one.example":{"rate":5,"burst":7}}', { 'one.example': { rate: 5, burst: 7 } }];
        if (l.schema.safeParse({ a: 1 }).success) return ['one.example:3', { 'one.example': 3 }];
        if (l.schema.safeParse({ a: ['x'] }).success) return ['{"one":["a.example","*.b.example"]}', { one: ['a.example', '*.b.example'] }];
        return ['{"one":"x"}', { one: 'x' }];
      case 'enum': {
        const other = ['standard', 'howk', 'both', 'fast', 'slow', 'debug', 'info', 'warn', 'error'].find((v) => v !== def && l.schema.safeParse(v).success);
        if (!other) throw new Error(`no alternative value for enum ${l.path.join('.')}`);
        return [other, other];
      }
    }
  };

  it('every leaf is read from its env name', () => {
    expect(leaves.length).toBeGreaterThan(60);
    for (const l of leaves) {
      const [raw, expected] = sample(l, get(defaults, l.path));
      expect(expected, l.path.join('.')).not.toEqual(get(defaults, l.path));
      const c = loadConfig({ env: { [l.env]: raw } });
      expect(get(c, l.path), `${l.env}=${raw}`).toEqual(expected);
    }
  });

  it('the docs table has one row per leaf with its env name, type and default', () => {
    const lines = configDocsTable().split('\n');
    expect(lines[0]).toBe('| key | env | type | default | description |');
    const rows = lines.slice(2);
    expect(rows).toHaveLength(leaves.length);
    for (const l of leaves) {
      const row = rows.find((r) => r.startsWith(`| \`${l.path.join('.')}\` |`));
      expect(row, l.path.join('.')).toBeDefined();
      expect(row).toContain(`| \`${l.env}\` | ${l.meta.kind} |`);
    }
  });

  it('the docs table covers every key the defaults have, and the optional ones', () => {
    // Walk the parsed defaults (independently of configLeaves) to list the keys.
    const MAPS = new Set(['concurrency.domain_overrides', 'api.outstanding_overrides', 'lua.http_allowlist', 'lua.credentials', 'lua.secret_env_hosts', 'edge.domain_rates']);
    const keys: string[] = [];
    const walk = (o: Record<string, unknown>, p: string[]) => {
      for (const [k, v] of Object.entries(o)) {
        const path = [...p, k];
        if (v && typeof v === 'object' && !Array.isArray(v) && !MAPS.has(path.join('.'))) walk(v as Record<string, unknown>, path);
        else keys.push(path.join('.'));
      }
    };
    walk(defaults as unknown as Record<string, unknown>, []);
    keys.push('redis.url', 'redis.password', 'signing.default_secret', 'signing.secrets_key', 'signing.old_secrets_keys');
    keys.push('bridge.kafka_password', 'bridge.redis_token', 'edge.kafka_rest_password', 'edge.redis_rest_url', 'edge.redis_rest_token', 'edge.api_keys', 'edge.bridge_headers');
    const table = configDocsTable();
    for (const k of keys) expect(table, k).toContain(`| \`${k}\` |`);
    expect(keys).toHaveLength(leaves.length);
  });

  it('the docs table prints defaults readably and marks secrets', () => {
    const row = (k: string) =>
      configDocsTable()
        .split('\n')
        .find((r) => r.startsWith(`| \`${k}\` |`))!;
    expect(row('retry.base_delay')).toContain('| `10s` |');
    expect(row('retry.max_delay')).toContain('| `1d` |');
    expect(row('kafka.retention')).toContain('| `7d` |');
    expect(row('api.port')).toContain('| `8080` |');
    expect(row('kafka.brokers')).toContain('| `localhost:9092` |');
    expect(row('retry.retry_on_status')).toContain('| `[]` |');
    expect(row('concurrency.domain_overrides')).toContain('| `{}` |');
    expect(row('redis.url')).toContain('| `(unset)` |');
    expect(row('signing.secrets_key')).toContain('(secret: never logged)');
    expect(row('redis.password')).toContain('(secret: never logged)');
    expect(row('api.port')).not.toContain('secret');
  });
});
