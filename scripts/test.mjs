// `npm test`: lint and typecheck, then every vitest project against real Kafka + Redis (started
// here, once, unless KAFKA_BROKERS / REDIS_URL are given). Ends with one summary line
// "tests: N passed, N failed, N skipped".
//
// The checks run two at a time while Kafka and Redis start. The projects run in lanes, each lane
// its projects one after another and the lanes side by side. HOWK_TEST_LANES chooses them:
// "serial" (the default) is one lane in the order unit, integration, browser, edge, replicated,
// chaos, integration one file at a time; "parallel" is three lanes (integration | replicated →
// chaos | unit → browser → edge) with two integration files at a time; or by hand ("a,b;c":
// lanes split by ';', projects by ','). HOWK_TEST_INTEGRATION_WORKERS overrides the integration
// files at a time. Lanes never share a server a test stops or flushes (integration and edge
// files each keep to topics, groups and a Redis db of their own; replicated and chaos kill
// servers of their own, on ports of their own). "parallel" is not the default: of six
// clean-clone runs with it on the CI machine, three failed timing-bound tests beside the
// other lanes (docs/TESTING.md, "Lanes").
import { spawn, spawnSync } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join, relative } from 'node:path';
import { root, withInfra } from './infra.mjs';

const bin = (name) => join(root, 'node_modules', '.bin', name);
const extra = process.argv.slice(2);
const ORDER = ['unit', 'integration', 'browser', 'edge', 'replicated', 'chaos'];
const PRESETS = { serial: ORDER.join(','), parallel: 'integration;replicated,chaos;unit,browser,edge' };
const LANE_SPEC = process.env.HOWK_TEST_LANES || 'serial';
const LANES = (() => {
  const spec = Object.hasOwn(PRESETS, LANE_SPEC) ? PRESETS[LANE_SPEC] : LANE_SPEC;
  const lanes = spec.split(';').map((l) =>
    l
      .split(',')
      .map((p) => p.trim())
      .filter(Boolean),
  );
  const named = lanes.flat();
  const unknown = named.filter((p) => !ORDER.includes(p));
  const missing = ORDER.filter((p) => !named.includes(p));
  if (unknown.length || missing.length || new Set(named).size !== named.length)
    throw new Error(`HOWK_TEST_LANES=${LANE_SPEC}: every project once (${ORDER.join(', ')}); unknown: ${unknown.join(', ') || '-'}, missing: ${missing.join(', ') || '-'}`);
  return lanes;
})();
// The chaos suite runs in its short CI profile (smaller counts, each scenario once, on a Kafka
// and Redis of its own); `npm run test:chaos` runs the full sizes three times
// (docs/RELIABILITY.md "Chaos suite").
const PROJECT_ENV = {
  integration: { HOWK_TEST_INTEGRATION_WORKERS: process.env.HOWK_TEST_INTEGRATION_WORKERS || (LANES.length > 1 ? '2' : '1') },
  chaos: { HOWK_CHAOS_PROFILE: 'ci', HOWK_CHAOS_REPEAT: '1' },
};

const secs = (ms) => `${(ms / 1000).toFixed(0)} s`;

/** Runs a command; `onLine` gets its output line by line (stdout and stderr). Resolves its exit code. */
const runAsync = (cmd, args, { env = process.env, onLine }) =>
  new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
    for (const stream of [child.stdout, child.stderr]) {
      let rest = '';
      stream.setEncoding('utf8');
      stream.on('data', (s) => {
        const lines = (rest + s).split('\n');
        rest = lines.pop();
        for (const l of lines) onLine(l);
      });
      stream.on('end', () => rest && onLine(rest));
    }
    child.on('error', (e) => {
      onLine(`${cmd}: ${e.message}`);
      resolve(1);
    });
    child.on('close', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });

// ---------------------------------------------------------------------------------- checks --
const CHECKS = [
  ['lint (eslint: core/ stays runtime-agnostic, core/ layers)', bin('eslint'), ['.']],
  ['import cycles (dependency-cruiser; `npm run lint:cycles`)', bin('depcruise'), ['--config', '.dependency-cruiser.mjs', '--output-type', 'err', '.']],
  ['format (prettier --check; `npm run format` fixes)', bin('prettier'), ['--check', '--log-level', 'warn', '**/*.{ts,tsx,js,mjs,cjs,json}']],
  ['typecheck (tsc --noEmit)', bin('tsc'), ['--noEmit', '-p', '.']],
  ['typecheck core (no Node types)', bin('tsc'), ['--noEmit', '-p', 'core/tsconfig.json']],
];
if (existsSync(join(root, 'edge', 'tsconfig.json'))) CHECKS.push(['typecheck edge (workers types)', bin('tsc'), ['--noEmit', '-p', 'edge/tsconfig.json']]);
// terraform fmt where a terraform binary exists; elsewhere test/unit/terraform.test.ts checks
// the same layout rules. `terraform validate` is not run: it needs the providers from the registry.
if (spawnSync('terraform', ['version'], { stdio: 'ignore' }).status === 0) {
  CHECKS.push(['terraform fmt -check (infra/terraform)', 'terraform', ['fmt', '-check', '-recursive', '-diff', 'infra/terraform']]);
} else console.log('\n== terraform fmt skipped: no terraform binary on PATH (the unit tests check the layout)');

/** Each check's output is printed whole when it ends, so two at a time still read one by one. */
const runChecks = async () => {
  let failed = 0;
  const queue = [...CHECKS];
  const worker = async () => {
    for (let c = queue.shift(); c; c = queue.shift()) {
      const [name, cmd, args] = c;
      const t0 = Date.now();
      const out = [];
      const code = await runAsync(cmd, args, { onLine: (l) => out.push(l) });
      console.log(`\n== ${name} (${secs(Date.now() - t0)})`);
      if (out.length) console.log(out.join('\n'));
      if (code !== 0) console.log(`== ${name} failed (exit ${code})`);
      failed ||= code;
    }
  };
  await Promise.all([worker(), worker()]);
  return failed;
};

const t0 = Date.now();
// The checks start first and run while Kafka and Redis start (withInfra below); no test starts
// before they have passed.
let checksMs = 0;
const checks = runChecks().then((failed) => {
  checksMs = Date.now() - t0;
  return failed;
});

// ---------------------------------------------------------------------------------- vitest --
mkdirSync(join(root, '.tmp'), { recursive: true });
const totals = { passed: 0, failed: 0, skipped: 0, total: 0 };
const walls = [];
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

// Ctrl-C: the projects running get it too; no lane starts another (infra.mjs stops the servers).
let interrupted = false;
process.on('SIGINT', () => (interrupted = true));

/** One project: its output streamed with a `[project]` prefix (lanes interleave) and kept whole in .tmp/vitest-<project>.log. */
const runProject = async (project) => {
  if (interrupted) return;
  const report = join(root, '.tmp', `vitest-${project}.json`);
  const errorsFile = join(root, '.tmp', `vitest-${project}-errors.json`);
  const logFile = join(root, '.tmp', `vitest-${project}.log`);
  for (const f of [report, errorsFile]) if (existsSync(f)) rmSync(f);
  const log = createWriteStream(logFile);
  const start = Date.now();
  console.log(`\n== vitest --project ${project} (started at +${secs(start - t0)}; whole output in .tmp/vitest-${project}.log)`);
  const c = await runAsync(
    bin('vitest'),
    ['run', '--project', project, '--reporter=default', '--reporter=json', `--outputFile.json=${report}`, '--reporter=./scripts/failure-reporter.mjs', ...extra],
    {
      env: { ...process.env, ...PROJECT_ENV[project], HOWK_TEST_ERRORS_FILE: errorsFile, HOWK_TEST_CACHE_DIR: join(root, 'node_modules', '.vite', `npm-test-${project}`) },
      onLine: (l) => {
        log.write(`${l}\n`);
        console.log(`[${project}] ${l}`);
      },
    },
  );
  await new Promise((r) => log.end(r));
  const wall = Date.now() - start;
  walls.push({ project, wall, start: start - t0, code: c });
  console.log(`\n== vitest --project ${project} ${c === 0 ? 'passed' : `failed (exit ${c})`} in ${secs(wall)}`);
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
};

const checksFailed = await withInfra(async () => {
  const failed = await checks;
  if (failed) return failed;
  console.log(`\n== lanes: ${LANES.map((l) => l.join(' → ')).join('  |  ')} (integration files at a time: ${PROJECT_ENV.integration.HOWK_TEST_INTEGRATION_WORKERS})`);
  await Promise.all(
    LANES.map(async (lane) => {
      for (const project of lane) await runProject(project);
    }),
  );
  return 0;
});
if (checksFailed) process.exit(checksFailed);

console.log(`\nwall times: checks ${secs(checksMs)}; ${walls.map((w) => `${w.project} ${secs(w.wall)} (from +${secs(w.start)})`).join(', ')}; total ${secs(Date.now() - t0)}`);
if (causes.length) console.log(`\nwhat failed:\n${causes.map((x) => `  - ${x}`).join('\n')}`);
console.log(`\ntests: ${totals.passed} passed, ${totals.failed} failed, ${totals.skipped} skipped`);
if (totals.total === 0) {
  console.log('no test ran');
  process.exit(1);
}
process.exit(code);
