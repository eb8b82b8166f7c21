import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { envExampleText } from '../../core/config/env-example';
import { loadConfig } from '../../core/config/load';
import { configLeaves } from '../../core/config/leaves';
import { ConfigSchema } from '../../core/config/schema';

const committed = () => readFileSync(new URL('../../.env.example', import.meta.url), 'utf8');

describe('.env.example', () => {
  it('is the file generated from the config schema (run `npm run docs:config` after changing it)', () => {
    expect(committed()).toBe(envExampleText());
  });

  it('names every variable of the schema once, and its values uncommented load as the defaults', () => {
    const lines = committed()
      .split('\n')
      .filter((l) => /^# HOWK_[A-Z0-9_]+=/.test(l))
      .map((l) => l.slice(2));
    const names = lines.map((l) => l.split('=')[0]);
    expect(names).toEqual(configLeaves().map((l) => l.env));
    const env = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
    expect(loadConfig({ env })).toEqual(ConfigSchema.parse({}));
  });
});
