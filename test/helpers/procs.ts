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

export const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
