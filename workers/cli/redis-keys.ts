import { parseArgs } from 'node:util';
import type { Config } from '../../core/config/schema';
import { createLogger } from '../../core/ports/logger';
import { redisUrlOf } from '../node/config';
import { loadTransformers } from '../node/transformers';
import { createRedis } from '../redis/client';
import { migrateLegacyKv } from '../redis/migrate-kv';
import type { Out } from './keys';

// `howk redis-keys migrate-kv`: copies Lua kv entries written before kv keys were tagged by
// owner (docs/ARCHITECTURE.md, Redis keys). The transformers of transformer.script_dirs are
// known owners; config ids that ran delivery scripts using kv are named with --configs.

export const REDIS_KEYS_USAGE = `usage:
  howk redis-keys migrate-kv [--configs cfg1,cfg2] [--transformers t1,t2] [--apply] [--delete-old]
    reports (and with --apply copies) kv:<owner>:<key> entries to the tagged shape; an
    entry that fits several named owners is listed, never copied
options: --config file.yaml (Redis settings and transformer.script_dirs, as for the binaries)`;

const list = (raw: string | undefined): string[] =>
  (raw ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

/** Runs one `redis-keys` command; returns the exit code. */
export const runRedisKeys = async (config: Config, argv: string[], io: Out): Promise<number> => {
  const { values, positionals } = parseArgs({
    args: argv,
    options: { configs: { type: 'string' }, transformers: { type: 'string' }, apply: { type: 'boolean' }, 'delete-old': { type: 'boolean' }, config: { type: 'string' } },
    allowPositionals: true,
    strict: true,
  });
  if (positionals.length !== 1 || positionals[0] !== 'migrate-kv' || (values['delete-old'] && !values.apply)) {
    io.err(REDIS_KEYS_USAGE);
    return 2;
  }
  const log = createLogger('howk-redis-keys', 'warn', (l) => io.err(l));
  const { scripts } = await loadTransformers(config.transformer.script_dirs, config.lua.max_script_bytes, log);
  const owners = { transformers: new Set([...scripts.keys(), ...list(values.transformers)]), configs: new Set(list(values.configs)) };
  const redis = createRedis(redisUrlOf(config), { commandTimeoutMs: config.redis.command_timeout, clusterNodes: config.redis.cluster_nodes });
  try {
    const report = await migrateLegacyKv(redis, owners, { apply: values.apply ?? false, deleteOld: values['delete-old'] ?? false });
    io.out(JSON.stringify(report));
    return 0;
  } finally {
    await redis.quit();
  }
};
