import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

export type Proc = { role: string; child: ChildProcess; output: () => string; exited: Promise<number | null> };

/** Starts a Howk binary as its own process (`node --import tsx workers/<role>/main.ts`). */
export const spawnRole = (role: 'api' | 'worker' | 'scheduler' | 'dev' | 'bridge' | 'reconciler', env: Record<string, string>, args: string[] = []): Proc => {
  const child = spawn(process.execPath, ['--import', 'tsx', join(root, 'workers', role, 'main.ts'), ...args], {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const keep = (b: Buffer) => {
    out += b.toString();
    if (out.length > 200_000) out = out.slice(-100_000);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  return { role, child, output: () => out, exited };
};

export const stopProc = async (p: Proc, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> => {
  if (p.child.exitCode !== null || p.child.signalCode !== null) return;
  p.child.kill(signal);
  const t = setTimeout(() => p.child.kill('SIGKILL'), 10_000);
  await p.exited;
  clearTimeout(t);
};

// Ports handed out from below the kernel's ephemeral range (32768-60999 here), which
// outgoing connections draw from: a port picked from that range and released can be
// taken by a client's connect() before the test's server binds it (ERR_ADDRESS_IN_USE).
// 23000-26000 is clear of the fixed ports the suites start servers on.
const PORT_LOW = 23_000;
const PORT_SPAN = 3_000;
const handedOut = new Set<number>();

const bindable = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });

/** A loopback port nothing listens on, not handed out before in this process. */
export const freePort = async (): Promise<number> => {
  for (let i = 0; i < 200; i++) {
    const port = PORT_LOW + Math.floor(Math.random() * PORT_SPAN);
    if (handedOut.has(port) || !(await bindable(port))) continue;
    handedOut.add(port);
    return port;
  }
  throw new Error(`no free port in ${PORT_LOW}-${PORT_LOW + PORT_SPAN - 1}`);
};
