import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { loadConfigWithSources, type LoadedConfig } from '../../core/config/load';
import type { Config } from '../../core/config/schema';

export type CliFlags = { config?: string; port?: string; host?: string; dry?: boolean; 'scripts-dir'?: string };

export const parseFlags = (argv: string[]): CliFlags =>
  parseArgs({
    args: argv,
    options: { config: { type: 'string' }, port: { type: 'string' }, host: { type: 'string' }, dry: { type: 'boolean' }, 'scripts-dir': { type: 'string' } },
    strict: true,
  }).values as CliFlags;

/** Defaults < --config YAML < HOWK_* env < flags, with the keys each one set. */
export const loadProcessConfig = (flags: CliFlags, env: Record<string, string | undefined> = process.env): LoadedConfig =>
  loadConfigWithSources({
    yaml: flags.config ? readFileSync(flags.config, 'utf8') : undefined,
    env,
    overrides: {
      ...(flags.port ? { 'api.port': Number(flags.port) } : {}),
      ...(flags.host ? { 'api.host': flags.host } : {}),
      ...(flags.dry ? { 'worker.dry_run': true } : {}),
    },
  });

/** Defaults < --config YAML < HOWK_* env < flags. */
export const configFromProcess = (flags: CliFlags): Config => loadProcessConfig(flags).config;

export const redisUrlOf = (c: Config): string => {
  if (c.redis.url) return c.redis.url;
  const auth = c.redis.password ? `:${encodeURIComponent(c.redis.password)}@` : '';
  return `redis://${auth}${c.redis.addr}/${c.redis.db}`;
};
