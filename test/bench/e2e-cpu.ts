// CPU accounting of e2e.bench.ts: the services, the broker and Redis, this process, the rest
// of the machine and its biggest consumers over the measured window, per 1,000 webhooks, and
// the rate the run's own CPU would allow on dedicated cores.
import { availableParallelism } from 'node:os';
import { allProcesses, biggestNeighbours, CLK_TCK, cpuTicksOf, fmt, systemTicks } from './busy-harness';

type Row = { name: string; pid: number | undefined; ticks0?: number; t0: number };
const rowOf = (name: string, pid: number | undefined): Row => ({ name, pid, ticks0: pid ? cpuTicksOf(pid) : undefined, t0: performance.now() });

/** What the table needs besides the CPU counters: the window, the webhooks, the machine before. */
export type CpuFigures = { tStart: number; tEnd: number; delivered: number; busyBefore: number; mine: number[] };

export type E2eCpu = {
  /** A process replaced during the window (the prefill's worker): its row counts from now. */
  restart: (name: string, pid: number | undefined) => void;
  pids: () => (number | undefined)[];
  /** Reads the counters at the window's end; the table is computed from them later. */
  stop: () => (f: CpuFigures) => [string, string][];
};

export const startE2eCpu = (procs: { name: string; pid: number | undefined }[]): E2eCpu => {
  const rows = procs.map((p) => rowOf(p.name, p.pid));
  const self0 = process.cpuUsage();
  const sys0 = systemTicks();
  const all0 = allProcesses();
  return {
    restart: (name, pid) => {
      rows[rows.findIndex((r) => r.name === name)] = rowOf(name, pid);
    },
    pids: () => rows.map((r) => r.pid),
    stop: () => {
      const cpu1 = rows.map((r) => (r.pid ? cpuTicksOf(r.pid) : undefined));
      const self1 = process.cpuUsage(self0);
      const sys1 = systemTicks();
      const all1 = allProcesses();
      return (f) => table(f, rows, cpu1, (self1.user + self1.system) / 1e6, sys0, sys1, biggestNeighbours(all0, all1, [process.pid, ...f.mine, ...rows.map((r) => r.pid ?? -1)]));
    },
  };
};

const table = (
  f: CpuFigures,
  rows: Row[],
  cpu1: (number | undefined)[],
  selfS: number,
  sys0: { busy: number; total: number },
  sys1: { busy: number; total: number },
  others: { name: string; s: number }[],
): [string, string][] => {
  const cores = availableParallelism();
  const wallS = (f.tEnd - f.tStart) / 1000;
  const perK = (cpuS: number) => fmt((cpuS * 1e6) / Math.max(1, f.delivered));
  const out: [string, string][] = rows.map((r, i) => {
    const a = r.ticks0;
    const b = cpu1[i];
    if (a === undefined || b === undefined) return [r.name, 'n/a'];
    const s = (b - a) / CLK_TCK;
    const windowS = (f.tEnd - r.t0) / 1000;
    const since = r.t0 > f.tStart + 1 ? `, over its last ${windowS.toFixed(1)} s` : '';
    return [r.name, `${s.toFixed(1)} s  (${fmt((s / windowS) * 100)}% of one core${since}, ${perK(s)} ms per 1,000 webhooks)`];
  });
  out.push(['bench (load + receiver)', `${selfS.toFixed(1)} s  (${fmt((selfS / wallS) * 100)}% of one core, ${perK(selfS)} ms per 1,000 webhooks)`]);
  const sysBusy = ((sys1.busy - sys0.busy) / Math.max(1, sys1.total - sys0.total)) * 100;
  const ours = out.reduce((a, [, v]) => a + (Number.parseFloat(v) || 0), 0);
  const otherS = Math.max(0, (sys1.busy - sys0.busy) / CLK_TCK - ours);
  // Contention-proof yardstick: the run's own CPU per webhook, and the rate it would allow
  // if the run had every core to itself (linear scaling assumed; an estimate, not a measurement).
  const oursPerK = (ours * 1e6) / Math.max(1, f.delivered);
  out.push([
    'run total',
    `${fmt(oursPerK)} ms CPU per 1,000 webhooks → at most ~${fmt((cores * 1e6) / Math.max(1, oursPerK), 0)} webhooks/s on ${cores} dedicated cores (estimate)`,
  ]);
  out.push(['other processes', `${otherS.toFixed(1)} s  (${fmt((otherS / wallS) * 100)}% of one core; ${fmt(f.busyBefore)}% of the machine was busy before the run)`]);
  if (others.length) out.push(['  of which', others.map((o) => `${o.name} ${o.s.toFixed(1)} s`).join('; ')]);
  out.push(['whole machine', `${fmt(sysBusy)}% busy over the run (all ${cores} cores)`]);
  return out;
};
