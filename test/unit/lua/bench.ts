// Per-run overhead of delivery scripts (not a test): `npx tsx test/unit/lua/bench.ts [runs]`.
// Each run is a fresh Lua state + prelude + cached bytecode of the script + result read-back.
import { runDeliveryScript, type DeliveryInput } from '../../../core/lua/delivery';
import { createLuaEngine } from '../../../core/lua/engine';

const engine = createLuaEngine();
const runs = Number(process.argv[2] ?? 5000);

const input: DeliveryInput = {
  payload: JSON.stringify({ id: 'evt_1', type: 'order.completed', data: { order_id: 'ord_123', amount: 4200, currency: 'EUR', items: [1, 2, 3] } }),
  headers: { 'X-Tenant': 't1', 'Content-Type': 'application/json' },
  config_id: 'cfg_bench',
  attempt: 0,
  webhook_id: 'wh_01BENCH',
  endpoint: 'https://example.com/hook',
};

const scripts: [string, string][] = [
  ['empty script', ''],
  ['set one header (small delivery script)', `request.headers['X-Attempt'] = tostring(webhook.attempt + 1)`],
  ['read payload, sign, set 2 headers', `local p = request.payload request.headers['X-Order'] = p.data.order_id request.headers['X-Sig'] = crypto.hmac_sha256('k', request.body)`],
  ['modify payload (re-serialized body)', `request.payload.data.amount = request.payload.data.amount + 1`],
];

const stats = (us: number[]) => {
  us.sort((a, b) => a - b);
  const q = (p: number) => us[Math.min(us.length - 1, Math.floor(us.length * p))]!;
  return { median: q(0.5), p99: q(0.99), mean: us.reduce((a, b) => a + b, 0) / us.length };
};

await engine.checkSyntax(''); // load the WASM outside the measurement
console.log(`node ${process.version}, ${runs} sequential runs per script (after ${Math.min(500, runs)} warm-up runs)\n`);
// Wall-clock quantiles per run, and process CPU time per run (steadier on a busy machine).
console.log('| script | median µs | p99 µs | mean µs | CPU µs/run |');
console.log('|---|---:|---:|---:|---:|');
for (const [label, code] of scripts) {
  for (let i = 0; i < Math.min(500, runs); i++) await runDeliveryScript(code, input, { engine });
  const us: number[] = [];
  const cpu0 = process.cpuUsage();
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    await runDeliveryScript(code, input, { engine });
    us.push((performance.now() - t0) * 1000);
  }
  const cpu = process.cpuUsage(cpu0);
  const s = stats(us);
  console.log(`| ${label} | ${s.median.toFixed(0)} | ${s.p99.toFixed(0)} | ${s.mean.toFixed(0)} | ${((cpu.user + cpu.system) / runs).toFixed(0)} |`);
}
