// Summarises a V8 .cpuprofile (from `BENCH_PROF=api,worker npm run bench`):
// self time by function, self time by file/package, and inclusive time of functions.
//
//   npx tsx test/bench/cpuprofile-top.ts .tmp/bench-prof/<run>/worker.cpuprofile [rows] [from-to]
//
// from-to (seconds since the profile started, e.g. 40-70) keeps only the samples of that window
// (a paced bench's measured window, without start-up and warm-up); without it the first lines
// say how busy each 5 s of the profile was, to choose one.
import { readFileSync } from 'node:fs';

type Node = { id: number; callFrame: { functionName: string; url: string; lineNumber: number; columnNumber?: number }; children?: number[] };
type Profile = { nodes: Node[]; samples: number[]; timeDeltas: number[]; startTime: number; endTime: number };

const [file, rowsArg, windowArg] = process.argv.slice(2);
if (!file) {
  console.error('usage: tsx test/bench/cpuprofile-top.ts <file.cpuprofile> [rows]');
  process.exit(2);
}
const rows = Number(rowsArg ?? 30);
const p = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const byId = new Map(p.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

const [fromS, toS] = windowArg ? windowArg.split('-').map(Number) : [0, Infinity];
const idleId = p.nodes.find((n) => n.callFrame.functionName === '(idle)')?.id;
const busyPer5s: number[] = [];
const selfUs = new Map<number, number>();
let at = 0;
p.samples.forEach((id, i) => {
  const d = p.timeDeltas[i] ?? 0;
  at += d;
  const slot = Math.floor(at / 5e6);
  if (id !== idleId) busyPer5s[slot] = (busyPer5s[slot] ?? 0) + d;
  if (at >= fromS! * 1e6 && at < toS! * 1e6) selfUs.set(id, (selfUs.get(id) ?? 0) + d);
});
if (!windowArg) console.log(`busy ms per 5 s from the start: ${Array.from(busyPer5s, (us, i) => `${i * 5}s ${((us ?? 0) / 1000).toFixed(0)}`).join(', ')}`);
const total = [...selfUs.values()].reduce((a, b) => a + b, 0);

const short = (url: string) => {
  if (!url) return '(native)';
  const nm = url.lastIndexOf('node_modules/');
  if (nm >= 0) {
    const rest = url.slice(nm + 13).split('/');
    return rest[0]!.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]!;
  }
  if (url.startsWith('node:')) return url;
  const m = /\/work\/[^/]+\/(.*)$/.exec(url);
  return m ? m[1]! : url;
};
const fnName = (n: Node) => `${n.callFrame.functionName || '(anon)'} ${short(n.callFrame.url)}:${n.callFrame.lineNumber + 1}:${(n.callFrame.columnNumber ?? 0) + 1}`;

const add = (m: Map<string, number>, k: string, v: number) => m.set(k, (m.get(k) ?? 0) + v);
const selfFn = new Map<string, number>();
const selfFile = new Map<string, number>();
const incl = new Map<string, number>();
for (const [id, us] of selfUs) {
  const n = byId.get(id)!;
  add(selfFn, fnName(n), us);
  add(selfFile, short(n.callFrame.url), us);
  // inclusive: every distinct function on the stack gets the sample once
  const seen = new Set<string>();
  for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
    const k = fnName(byId.get(cur)!);
    if (!seen.has(k)) {
      seen.add(k);
      add(incl, k, us);
    }
  }
}
const show = (title: string, m: Map<string, number>) => {
  console.log(`\n${title}`);
  for (const [k, us] of [...m].sort((a, b) => b[1] - a[1]).slice(0, rows))
    console.log(`  ${((us / total) * 100).toFixed(1).padStart(5)}%  ${(us / 1000).toFixed(0).padStart(6)} ms  ${k}`);
};
console.log(`${file}: ${(total / 1000).toFixed(0)} ms sampled${windowArg ? ` from ${fromS} s to ${toS} s` : ''}`);
show('self time by file / package', selfFile);
show('self time by function', selfFn);
show('inclusive time by function', incl);
