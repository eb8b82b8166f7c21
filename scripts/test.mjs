// `npm test`: lint, typecheck, then the whole vitest suite against real Kafka + Redis
// (started here unless KAFKA_BROKERS / REDIS_URL are given). Ends with one summary line
// "tests: N passed, N failed, N skipped".
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { root, withInfra } from './infra.mjs';

const run = (cmd, args, env = process.env) => spawnSync(cmd, args, { cwd: root, stdio: 'inherit', env }).status ?? 1;
const bin = (name) => join(root, 'node_modules', '.bin', name);
const extra = process.argv.slice(2);

const step = (name, fn) => {
  console.log(`\n== ${name}`);
  const code = fn();
  if (code !== 0) console.log(`== ${name} failed (exit ${code})`);
  return code;
};

let failed = 0;
failed ||= step('lint (eslint: core/ stays runtime-agnostic)', () => run(bin('eslint'), ['.']));
failed ||= step('typecheck (tsc --noEmit)', () => run(bin('tsc'), ['--noEmit', '-p', '.']));
if (failed) process.exit(failed);

const report = join(root, '.tmp', 'vitest.json');
mkdirSync(join(root, '.tmp'), { recursive: true });
if (existsSync(report)) rmSync(report);

const code = await withInfra(async () =>
  step('vitest (unit, contract, integration, e2e) on real Kafka + Redis', () =>
    run(bin('vitest'), ['run', '--reporter=default', '--reporter=json', `--outputFile.json=${report}`, ...extra]),
  ),
);

if (existsSync(report)) {
  const r = JSON.parse(readFileSync(report, 'utf8'));
  const skipped = (r.numPendingTests ?? 0) + (r.numTodoTests ?? 0);
  console.log(`\ntests: ${r.numPassedTests} passed, ${r.numFailedTests} failed, ${skipped} skipped`);
  if (r.numTotalTests === 0) {
    console.log('no test ran');
    process.exit(1);
  }
}
process.exit(code);
