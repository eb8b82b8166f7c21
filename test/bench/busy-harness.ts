// Process and machine helpers of the benchmarks on real Kafka + Redis: services as child
// processes, CPU accounting from /proc, load average, commit.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, readFileSync, readdirSync, readlinkSync } from 'node:fs';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import { request, type Dispatcher } from 'undici';
import { fileURLToPath } from 'node:url';

export const root = join(dirname(fileURLToPath(import.meta.url)), '../..');

let logTag = 'busy';
/** The tag of the progress lines on stderr (each bench its own). */
export const setLogTag = (tag: string) => void (logTag = tag);
export const log = (msg: string) => process.stderr.write(`[${logTag}] ${msg}\n`);
export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
export const fmt = (n: number, digits = 0) => (Number.isFinite(n) ? n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits }) : 'n/a');
export const percentile = (sorted: number[], p: number) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]! : NaN);

export const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const s = createNetServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as AddressInfo;
      s.close(() => resolve(port));
    });
  });

/** `uptime`'s line (load averages), or the load from /proc when uptime is missing. */
export const uptime = (): string => {
  try {
    return execFileSync('uptime', { encoding: 'utf8' }).trim();
  } catch {
    try {
      return `load average: ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(', ')}`;
    } catch {
      return 'load n/a';
    }
  }
};
export const load1 = (): number => {
  try {
    return Number(readFileSync('/proc/loadavg', 'utf8').split(' ')[0]);
  } catch {
    return NaN;
  }
};

export const gitRevision = (cwd: string = root): string => {
  try {
    const rev = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    return `${rev}${dirty ? ' + local changes' : ''}`;
  } catch {
    return 'unknown';
  }
};

// ------------------------------------------------------------------ CPU ----
export const CLK_TCK = 100; // Linux USER_HZ
export const cpuTicksOf = (pid: number | undefined): number | undefined => {
  if (!pid) return undefined;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(f[11]) + Number(f[12]); // utime + stime
  } catch {
    return undefined;
  }
};
export const systemTicks = (): { busy: number; total: number } => {
  const f = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  const total = f.reduce((a, b) => a + b, 0);
  return { busy: total - (f[3] ?? 0) - (f[4] ?? 0), total };
};
/** CPU ticks of every process on the machine, with a short name (to name the neighbours). */
export const allProcesses = (): Map<number, { ticks: number; name: string }> => {
  const out = new Map<number, { ticks: number; name: string }>();
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    const ticks = cpuTicksOf(Number(d));
    if (ticks === undefined) continue;
    let name = '';
    try {
      name = readFileSync(`/proc/${d}/cmdline`, 'utf8')
        .split('\0')
        .filter(Boolean)
        .map((a) => a.split('/').pop())
        .slice(0, 3)
        .join(' ')
        .slice(0, 40);
    } catch {
      /* gone */
    }
    out.set(Number(d), { ticks, name: name || `pid ${d}` });
  }
  return out;
};

/** The pid listening on 127.0.0.1:port (Kafka and Redis for the CPU table), best effort. */
export const pidListening = (port: number): number | undefined => {
  const inodes = new Set<string>();
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = '';
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const c = line.trim().split(/\s+/);
      if (c.length >= 10 && c[3] === '0A' && parseInt(c[1]!.split(':')[1]!, 16) === port) inodes.add(c[9]!);
    }
  }
  if (!inodes.size) return undefined;
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    let fds: string[] = [];
    try {
      fds = readdirSync(`/proc/${d}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${d}/fd/${fd}`));
        if (m && inodes.has(m[1]!)) return Number(d);
      } catch {
        /* fd went away */
      }
    }
  }
  return undefined;
};

type Processes = ReturnType<typeof allProcesses>;
/** The 3 processes outside `mine` that used the most CPU between two snapshots (0.2 s at least). */
export const biggestNeighbours = (all0: Processes, all1: Processes, mine: number[]): { name: string; s: number }[] => {
  const ours = new Set(mine);
  return [...all1]
    .filter(([pid]) => !ours.has(pid))
    .map(([pid, p]) => ({ name: p.name, s: (p.ticks - (all0.get(pid)?.ticks ?? 0)) / CLK_TCK }))
    .filter((x) => x.s >= 0.2)
    .sort((a, b) => b.s - a.s)
    .slice(0, 3);
};

export type CpuWindow = { stop: (delivered: number) => string[] };
/**
 * Starts a CPU window over the named processes (plus this one, the rest of the machine and
 * its biggest consumers). `stop` returns the lines of the table, as the e2e bench prints them.
 */
export const cpuWindow = (procs: { name: string; pid: number | undefined }[]): CpuWindow => {
  const t0 = performance.now();
  const ticks0 = procs.map((p) => cpuTicksOf(p.pid));
  const self0 = process.cpuUsage();
  const sys0 = systemTicks();
  const all0 = allProcesses();
  return {
    stop: (delivered) => {
      const wallS = (performance.now() - t0) / 1000;
      const ticks1 = procs.map((p) => cpuTicksOf(p.pid));
      const self = process.cpuUsage(self0);
      const sys1 = systemTicks();
      const all1 = allProcesses();
      const perK = (s: number) => fmt((s * 1e6) / Math.max(1, delivered));
      const rows: [string, string][] = [];
      let ours = 0;
      procs.forEach((p, i) => {
        const a = ticks0[i];
        const b = ticks1[i];
        if (a === undefined || b === undefined) return void rows.push([p.name, 'n/a']);
        const s = (b - a) / CLK_TCK;
        ours += s;
        rows.push([p.name, `${s.toFixed(1)} s  (${fmt((s / wallS) * 100)}% of one core, ${perK(s)} ms per 1,000 webhooks)`]);
      });
      const selfS = (self.user + self.system) / 1e6;
      ours += selfS;
      rows.push(['bench (load + receiver)', `${selfS.toFixed(1)} s  (${fmt((selfS / wallS) * 100)}% of one core, ${perK(selfS)} ms per 1,000 webhooks)`]);
      rows.push(['run total', `${fmt((ours * 1e6) / Math.max(1, delivered))} ms CPU per 1,000 webhooks`]);
      const otherS = Math.max(0, (sys1.busy - sys0.busy) / CLK_TCK - ours);
      const top = biggestNeighbours(all0, all1, [process.pid, ...procs.map((p) => p.pid ?? -1)]);
      rows.push([
        'other processes',
        `${otherS.toFixed(1)} s  (${fmt((otherS / wallS) * 100)}% of one core)${top.length ? `; ${top.map((o) => `${o.name} ${o.s.toFixed(1)} s`).join('; ')}` : ''}`,
      ]);
      rows.push(['whole machine', `${fmt(((sys1.busy - sys0.busy) / Math.max(1, sys1.total - sys0.total)) * 100)}% busy over ${wallS.toFixed(1)} s`]);
      const w = Math.max(...rows.map(([k]) => k.length));
      return rows.map(([k, v]) => `    ${k.padEnd(w)}  ${v}`);
    },
  };
};

// ------------------------------------------------------------------ services ----
export type Svc = { name: string; child: ChildProcess; logFile: string; exited: Promise<number | null>; lines: string[]; command: string };

/** More node flags (before the script), another checkout to run from, another log file name. */
export type ProcessOptions = { nodeArgs?: string[]; cwd?: string; logName?: string };
/** Runs `node --import tsx <script>` from the repository root, its output kept in logDir. */
export const startProcess = (name: string, script: string, env: Record<string, string>, logDir: string, opts: ProcessOptions = {}): Svc => {
  const args = ['--import', 'tsx', ...(opts.nodeArgs ?? []), script];
  const child = spawn(process.execPath, args, { cwd: opts.cwd ?? root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const logFile = join(logDir, `${opts.logName ?? name}.log`);
  const out = createWriteStream(logFile);
  const lines: string[] = [];
  const keep = (chunk: Buffer) => {
    out.write(chunk);
    for (const l of chunk.toString('utf8').split('\n')) {
      if (!l) continue;
      lines.push(l);
      if (lines.length > 200) lines.shift();
    }
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  return { name, child, logFile, exited, lines, command: `node ${args.join(' ')}` };
};

export const waitUntil = async (what: string, timeoutMs: number, fn: () => boolean | Promise<boolean>, svcs: Svc[] = []): Promise<void> => {
  const end = Date.now() + timeoutMs;
  for (;;) {
    if (await fn()) return;
    for (const s of svcs) {
      if (s.child.exitCode !== null) throw new Error(`${s.name} exited (code ${s.child.exitCode}) while waiting for ${what}:\n${s.lines.slice(-20).join('\n')}`);
    }
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(100);
  }
};

/** Waits for fn, at most timeoutMs; returns false instead of throwing on timeout. */
export const waitBounded = async (timeoutMs: number, fn: () => boolean): Promise<boolean> => {
  const end = performance.now() + timeoutMs;
  while (!fn()) {
    if (performance.now() > end) return false;
    await sleep(50);
  }
  return true;
};

export const stopProcess = async (s: Svc): Promise<void> => {
  if (s.child.exitCode !== null || s.child.signalCode !== null) return;
  s.child.kill('SIGTERM');
  const done = await Promise.race([s.exited.then(() => true), sleep(20_000).then(() => false)]);
  if (!done) {
    log(`${s.name} did not stop within 20 s; killing pid ${s.child.pid}`);
    s.child.kill('SIGKILL');
    await s.exited;
  }
};

/** Whether howk-api at `api` answers GET /ready with 200 (false while it starts or refuses). */
export const apiReady = async (api: string, agent: Dispatcher): Promise<boolean> => {
  try {
    const r = await request(`${api}/ready`, { dispatcher: agent });
    await r.body.dump();
    return r.statusCode === 200;
  } catch {
    return false;
  }
};

/**
 * The HOWK_* environment a benchmark's services share: the api on loopback, the run's own Kafka
 * client id, consumer group and topics, its Redis database, auth on without the per-key rate
 * limit, and deliveries to loopback allowed (the SSRF guard refuses it otherwise; the receivers
 * are on 127.0.0.1).
 */
export const serviceEnv = (o: { apiPort: number; brokers: string; runId: string; redisUrl: string; topics: Record<string, string>; secret?: string }): Record<string, string> => {
  const env: Record<string, string> = {
    HOWK_API_HOST: '127.0.0.1',
    HOWK_API_PORT: String(o.apiPort),
    HOWK_KAFKA_BROKERS: o.brokers,
    HOWK_KAFKA_CLIENT_ID: o.runId,
    HOWK_KAFKA_CONSUMER_GROUP: `${o.runId}-workers`,
    HOWK_REDIS_URL: o.redisUrl,
    ...(o.secret ? { HOWK_SIGNING_DEFAULT_SECRET: o.secret } : {}),
    HOWK_API_AUTH_RATE_LIMIT: process.env.HOWK_API_AUTH_RATE_LIMIT ?? '0',
    HOWK_DELIVERY_ALLOWED_NETWORKS: process.env.HOWK_DELIVERY_ALLOWED_NETWORKS ?? '127.0.0.1/32',
    HOWK_LOG_LEVEL: process.env.HOWK_LOG_LEVEL ?? 'info',
  };
  for (const [k, v] of Object.entries(o.topics)) env[`HOWK_KAFKA_TOPICS_${k.toUpperCase()}`] = v;
  return env;
};

/** Deletes a run's topics (a failure is logged: the run's figures stand without it). */
export const deleteRunTopics = async (brokers: string, runId: string, topics: Record<string, string>): Promise<void> => {
  const admin = new Kafka({ clientId: `${runId}-cleanup`, brokers: brokers.split(','), logLevel: logLevel.NOTHING }).admin();
  try {
    await admin.connect();
    await admin.deleteTopics({ topics: Object.values(topics), timeout: 10_000 });
  } catch (e) {
    log(`could not delete the run's topics: ${String(e)}`);
  } finally {
    await admin.disconnect().catch(() => {});
  }
};
