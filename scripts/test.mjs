// `npm test`: lint, typecheck, then every vitest project against real Kafka + Redis
// (started here unless KAFKA_BROKERS / REDIS_URL are given), one project after another so
// that timing-sensitive integration tests never share the 2 cores with the chaos or edge
// runs. Ends with one summary line "tests: N passed, N failed, N skipped".
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join, relative } from 'node:path';
import { root, withInfra } from './infra.mjs';

const run = (cmd, args, env = process.env) => spawnSync(cmd, args, { cwd: root, stdio: 'inherit', env }).status ?? 1;
const bin = (name) => join(root, 'node_modules', '.bin', name);
const extra = process.argv.slice(2);
// The chaos suite runs last, in its short CI profile (smaller counts, each scenario once, on a
// Kafka and Redis of its own); `npm run test:chaos` runs the full sizes three times
// (docs/RELIABILITY.md "Chaos suite").
const PROJECTS = ['unit', 'integration', 'browser', 'edge', 'replicated', 'chaos'];
const PROJECT_ENV = { chaos: { HOWK_CHAOS_PROFILE: 'ci', HOWK_CHAOS_REPEAT: '1' } };

const step = (name, fn) => {
  console.log(`\n== ${name}`);
  const code = fn();
  if (code !== 0) console.log(`== ${name} failed (exit ${code})`);
  return code;
};

let failed = 0;
failed ||= step('lint (eslint: core/ stays runtime-agnostic, core/ layers)', () => run(bin('eslint'), ['.']));
failed ||= step('import cycles (dependency-cruiser; `npm run lint:cycles`)', () => run(bin('depcruise'), ['--config', '.dependency-cruiser.mjs', '--output-type', 'err', '.']));
failed ||= step('format (prettier --check; `npm run format` fixes)', () => run(bin('prettier'), ['--check', '--log-level', 'warn', '**/*.{ts,tsx,js,mjs,cjs,json}']));
failed ||= step('typecheck (tsc --noEmit)', () => run(bin('tsc'), ['--noEmit', '-p', '.']));
failed ||= step('typecheck core (no Node types)', () => run(bin('tsc'), ['--noEmit', '-p', 'core/tsconfig.json']));
if (existsSync(join(root, 'edge', 'tsconfig.json'))) failed ||= step('typecheck edge (workers types)', () => run(bin('tsc'), ['--noEmit', '-p', 'edge/tsconfig.json']));
// terraform fmt where a terraform binary exists; elsewhere test/unit/terraform.test.ts checks
// the same layout rules. `terraform validate` is not run: it needs the providers from the registry.
if (spawnSync('terraform', ['version'], { stdio: 'ignore' }).status === 0) {
  failed ||= step('terraform fmt -check (infra/terraform)', () => run('terraform', ['fmt', '-check', '-recursive', '-diff', 'infra/terraform']));
} else console.log('\n== terraform fmt skipped: no terraform binary on PATH (the unit tests check the layout)');
if (failed) process.exit(failed);

mkdirSync(join(root, '.tmp'), { recursive: true });
const totals = { passed: 0, failed: 0, skipped: 0, total: 0 };
let code = 0;
// What failed, repeated at the very end: a CI log is often read from its tail only, and a
// project can exit non-zero with every test passed (a hook that failed or timed out, an
// unhandled error), which only this list and vitest's own output above tell.
const causes = [];
const failuresOf = (project, r, errors) => {
  for (const file of r.testResults ?? []) {
    const name = relative(root, file.name);
    const failed = (file.assertionResults ?? []).filter((a) => a.status === 'failed');
    for (const a of failed) causes.push(`${project}: ${name} > ${a.fullName}: ${(a.failureMessages?.[0] ?? '').split('\n')[0].slice(0, 300)}`);
    if (file.status === 'failed' && !failed.length) {
      const skipped = (file.assertionResults ?? []).filter((a) => a.status !== 'passed').length;
      const own = errors.filter((e) => e.file === name).map((e) => `${e.where}: ${e.message}`);
      const why = own.length ? own.join('; ') : file.message || 'an error outside any test (a hook or an error at load)';
      causes.push(`${project}: ${name}: failed outside its tests${skipped ? ` (${skipped} not run)` : ''}: ${why.split('\n')[0].slice(0, 400)}`);
    }
  }
  for (const e of errors.filter((x) => x.where === 'unhandled')) causes.push(`${project}: unhandled error: ${e.message}`);
};
await withInfra(async () => {
  for (const project of PROJECTS) {
    const report = join(root, '.tmp', `vitest-${project}.json`);
    const errorsFile = join(root, '.tmp', `vitest-${project}-errors.json`);
    for (const f of [report, errorsFile]) if (existsSync(f)) rmSync(f);
    const c = step(`vitest --project ${project}`, () =>
      run(
        bin('vitest'),
        ['run', '--project', project, '--reporter=default', '--reporter=json', `--outputFile.json=${report}`, '--reporter=./scripts/failure-reporter.mjs', ...extra],
        {
          ...process.env,
          ...PROJECT_ENV[project],
          HOWK_TEST_ERRORS_FILE: errorsFile,
        },
      ),
    );
    code ||= c;
    if (existsSync(report)) {
      const r = JSON.parse(readFileSync(report, 'utf8'));
      totals.passed += r.numPassedTests;
      totals.failed += r.numFailedTests;
      totals.skipped += (r.numPendingTests ?? 0) + (r.numTodoTests ?? 0);
      totals.total += r.numTotalTests;
      failuresOf(project, r, existsSync(errorsFile) ? JSON.parse(readFileSync(errorsFile, 'utf8')) : []);
      if (c !== 0 && r.success && !causes.some((x) => x.startsWith(`${project}:`)))
        causes.push(`${project}: exit ${c} with every test passed: look above for "Unhandled" errors or a failed hook`);
    } else if (c !== 0) {
      totals.failed += 1;
      causes.push(`${project}: exit ${c} and no report written`);
    }
  }
});

if (causes.length) console.log(`\nwhat failed:\n${causes.map((x) => `  - ${x}`).join('\n')}`);
console.log(`\ntests: ${totals.passed} passed, ${totals.failed} failed, ${totals.skipped} skipped`);
if (totals.total === 0) {
  console.log('no test ran');
  process.exit(1);
}
process.exit(code);
