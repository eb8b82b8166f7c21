import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { requireEnv } from '../helpers/env';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

// schemathesis against a live howk-api (keys on, no worker: nothing is delivered anywhere),
// in the bounded CI profile of scripts/fuzz.mjs (about a minute).
describe('fuzzing howk-api with its own OpenAPI document', () => {
  it('finds no 5xx and no response that violates the spec', async () => {
    const env = { ...process.env, KAFKA_BROKERS: requireEnv('KAFKA_BROKERS'), REDIS_URL: requireEnv('REDIS_URL') };
    const child = spawn(process.execPath, [join(root, 'scripts/fuzz.mjs'), '--profile', 'ci'], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (b) => (out += b));
    child.stderr.on('data', (b) => (out += b));
    const code = await new Promise<number | null>((r) => child.on('exit', r));
    const summary = /fuzz: .*/.exec(out)?.[0] ?? '';
    console.log(summary);
    expect(code, out.slice(-6000)).toBe(0);
    expect(summary).toMatch(/, 0 failures/);
  }, 300_000);
});
