// The Chromium the browser tests drive (test/browser, docs/CONSOLE.md): Debian's package at
// /usr/bin/chromium (HOWK_CHROMIUM to use another), installed with apt-get when missing.
//
//   node scripts/browser.mjs   # prints the path, installing chromium first if needed
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const chromiumPath = () => process.env.HOWK_CHROMIUM || '/usr/bin/chromium';

export const ensureChromium = () => {
  const path = chromiumPath();
  if (existsSync(path)) return path;
  if (process.getuid?.() !== 0) throw new Error(`${path} is missing and this is not root: install Debian's chromium (apt-get install chromium) or set HOWK_CHROMIUM`);
  console.error(`installing Debian's chromium via apt-get (${path} is missing)`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  for (const args of [
    ['update', '-qq'],
    ['install', '-y', '-qq', '--no-install-recommends', 'chromium'],
  ]) {
    const r = spawnSync('apt-get', args, { stdio: ['ignore', 'inherit', 'inherit'], env });
    if (r.status !== 0) throw new Error(`apt-get ${args.join(' ')} failed (exit ${r.status})`);
  }
  if (!existsSync(path)) throw new Error(`apt-get installed chromium but ${path} is still missing`);
  return path;
};

if (process.argv[1] === fileURLToPath(import.meta.url)) console.log(ensureChromium());
