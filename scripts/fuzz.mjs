// Fuzzes howk-api with schemathesis against its own OpenAPI document.
//
//   node scripts/fuzz.mjs [--profile ci|full] [--seed N]
//
// Installs schemathesis with pip when it is missing; uses KAFKA_BROKERS + REDIS_URL or
// starts Kafka + Redis itself (scripts/infra.mjs). howk-api runs with API keys on, on topics
// of its own and Redis db 8, and NO worker: enqueued webhooks stay in Kafka, so fuzzed
// endpoints are never contacted. Fails on any 5xx or any response that violates the spec.
// The last line is "fuzz: <cases> cases, <failures> failures (<profile>, <seconds> s)".
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { root, withInfra } from './infra.mjs';

const { values } = parseArgs({ options: { profile: { type: 'string', default: 'ci' }, seed: { type: 'string', default: '20261130' } } });
const PROFILES = {
  // Bounded for `npm test`: about a minute on a 2-core machine.
  ci: ['--workers', '1', '--max-examples', '30', '--max-time', '50', '--phases', 'examples,coverage,fuzzing'],
  full: ['--workers', '2', '--max-examples', '300', '--max-time', '600', '--phases', 'examples,coverage,fuzzing,stateful'],
};
const CHECKS = 'not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance,response_headers_conformance';
const profile = PROFILES[values.profile];
if (!profile) throw new Error(`unknown profile ${values.profile} (ci, full)`);

const log = (s) => console.error(`[fuzz] ${s}`);

const ensureSchemathesis = () => {
  const has = () => spawnSync('python3', ['-m', 'schemathesis.cli', '--version'], { encoding: 'utf8' }).status === 0 || spawnSync('schemathesis', ['--version']).status === 0;
  if (has()) return;
  log('installing schemathesis with pip');
  const r = spawnSync('python3', ['-m', 'pip', 'install', '--quiet', 'schemathesis'], { stdio: 'inherit' });
  if (r.status !== 0 || !has()) throw new Error('could not install schemathesis (python3 -m pip install schemathesis)');
};

const freePort = () =>
  new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });

const tsx = (entry, args, env, opts = {}) =>
  spawn(process.execPath, ['--import', 'tsx', join(root, entry), ...args], { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'], ...opts });

const collect = (child) => {
  let out = '';
  child.stdout.on('data', (b) => (out += b));
  child.stderr.on('data', (b) => (out += b));
  return () => out;
};

const run = async () => {
  ensureSchemathesis();
  const p = `fuzz-${Date.now().toString(36)}`;
  const port = await freePort();
  const env = {
    HOWK_KAFKA_BROKERS: process.env.KAFKA_BROKERS,
    HOWK_REDIS_URL: `${process.env.REDIS_URL.replace(/\/\d*$/, '')}/8`,
    HOWK_API_PORT: String(port),
    HOWK_API_HOST: '127.0.0.1',
    HOWK_KAFKA_PARTITIONS: '1',
    HOWK_LOG_LEVEL: 'error',
    HOWK_API_AUTH_ENABLED: 'true',
    // The fuzzer is one key sending as fast as it can; the limit itself has its own tests.
    HOWK_API_AUTH_RATE_LIMIT: '0',
    HOWK_SECRETS_KEY: Buffer.alloc(32, 9).toString('base64'),
    ...Object.fromEntries(
      ['pending', 'slow', 'results', 'deadletter', 'state', 'scripts', 'keys', 'config_secrets', 'applications', 'messages'].map((t) => [
        `HOWK_KAFKA_TOPICS_${t.toUpperCase()}`,
        `${p}.${t}`,
      ]),
    ),
  };
  const cli = spawnSync(process.execPath, ['--import', 'tsx', join(root, 'workers/cli/main.ts'), 'keys', 'create', '--scopes', 'admin', '--name', 'fuzz'], {
    cwd: root,
    env: { ...process.env, ...env },
    encoding: 'utf8',
  });
  if (cli.status !== 0) throw new Error(`could not create the fuzzing key: ${cli.stderr}`);
  const key = JSON.parse(cli.stdout.trim().split('\n').pop()).key;

  const api = tsx('workers/api/main.ts', [], env);
  const apiOut = collect(api);
  const base = `http://127.0.0.1:${port}`;
  try {
    const until = Date.now() + 60_000;
    for (;;) {
      const ok = await fetch(`${base}/ready`).then(
        (r) => r.status === 200,
        () => false,
      );
      if (ok) break;
      if (Date.now() > until || api.exitCode !== null) throw new Error(`howk-api did not become ready:\n${apiOut()}`);
      await new Promise((r) => setTimeout(r, 200));
    }
    const t0 = Date.now();
    // Two passes: revoking a key (DELETE /keys/{id}) with an id it read from GET /keys, the fuzzer
    // revoked its own key, and every operation after that saw only 401s. So that operation runs
    // last, on its own (one operation: 10 s of the profile's time).
    const REVOKE = 'deleteKeysId';
    const pass = (select, bounds = []) => {
      const reportDir = mkdtempSync(join(tmpdir(), 'howk-fuzz-'));
      const args = [
        'run',
        `${base}/openapi.json`,
        '--checks',
        CHECKS,
        '--seed',
        values.seed,
        '--header',
        `Authorization: Bearer ${key}`,
        ...select,
        '--report',
        'junit',
        '--report-junit-path',
        join(reportDir, 'junit.xml'),
        ...profile,
        ...bounds,
      ];
      log(`schemathesis ${args.map((a) => (a.startsWith('Authorization') ? 'Authorization: Bearer ***' : a)).join(' ')}`);
      // cwd: the report dir, so that schemathesis' own .schemathesis/ cache stays out of the tree.
      const st = spawnSync('schemathesis', args, {
        cwd: reportDir,
        stdio: ['ignore', 'pipe', 'inherit'],
        encoding: 'utf8',
        maxBuffer: 64 << 20,
        env: { ...process.env, SCHEMATHESIS_TELEMETRY: 'false', NO_COLOR: '1' },
      });
      process.stderr.write(st.stdout ?? '');
      const junit = readFileSync(join(reportDir, 'junit.xml'), 'utf8');
      return {
        status: st.status ?? 1,
        failures: [...junit.matchAll(/<failure/g)].length + [...junit.matchAll(/<error/g)].length,
        operations: [...junit.matchAll(/<testcase /g)].length,
        cases: Number(/(\d+) generated/.exec(st.stdout ?? '')?.[1] ?? 0),
      };
    };
    const runs = [pass(['--exclude-operation-id', REVOKE]), pass(['--include-operation-id', REVOKE], ['--max-time', '10'])];
    const secs = ((Date.now() - t0) / 1000).toFixed(0);
    const sum = (k) => runs.reduce((n, r) => n + r[k], 0);
    console.log(`fuzz: ${sum('operations')} operations, ${sum('cases')} cases, ${sum('failures')} failures (${values.profile}, ${secs} s)`);
    if (/level":"error"|unhandled error/.test(apiOut())) log(`howk-api logged errors:\n${apiOut()}`);
    return runs.find((r) => r.status !== 0)?.status ?? 0;
  } finally {
    api.kill('SIGTERM');
    await new Promise((r) => api.on('exit', r));
  }
};

process.exit(await withInfra(run));
