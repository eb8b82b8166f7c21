import AxeBuilder from '@axe-core/playwright';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { expect } from 'vitest';
import { chromiumPath } from '../../scripts/browser.mjs';
import { waitFor } from '../helpers/env';
import { freePort, spawnRole, stopProc, type Proc } from '../helpers/procs';

// The browser tests: the howk-dev binary as a child process on a loopback port, driven by
// Debian's Chromium (headless) through playwright-core.

export const SHOTS = join(import.meta.dirname, '..', '..', 'docs', 'console');

export type Dev = { base: string; proc: Proc; stop: () => Promise<void> };

export const startDev = async (env: Record<string, string> = {}): Promise<Dev> => {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const proc = spawnRole('dev', { HOWK_API_PORT: String(port), HOWK_API_HOST: '127.0.0.1', HOWK_LOG_LEVEL: 'info', ...env }, ['--memory']);
  await waitFor(
    async () =>
      proc.output().includes('howk-dev ready') &&
      (await fetch(`${base}/health`).then(
        (r) => r.ok,
        () => false,
      )),
    { timeoutMs: 60_000, what: `howk-dev on ${base}\n${proc.output()}` },
  );
  return { base, proc, stop: () => stopProc(proc) };
};

export const launch = (): Promise<Browser> => chromium.launch({ executablePath: chromiumPath(), headless: true, args: ['--no-sandbox'] });

/** A page that records script errors and Content-Security-Policy violations. */
export const openPage = async (browser: Browser) => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error' && !/Failed to load resource: the server responded with a status of 40[14]/.test(m.text())) problems.push(`console: ${m.text()}`);
  });
  return { page, problems, close: () => context.close() };
};

/** No serious or critical axe-core violation on the page as it is now. */
export const expectAccessible = async (page: Page): Promise<void> => {
  const r = await new AxeBuilder({ page }).analyze();
  const bad = r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  expect(bad.map((v) => `${v.id} (${v.impact}): ${v.help} at ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`)).toEqual([]);
};

/** Into docs/console (the whole page, or the viewport: a modal dialog's backdrop covers only that). */
export const screenshot = async (page: Page, name: string, fullPage = true): Promise<void> => {
  mkdirSync(SHOTS, { recursive: true });
  // From the top, so that the Lab's sticky controls sit where they belong in a full-page shot.
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage });
};

/** A page test's last checks: no serious axe violation, its screenshot, no script error or CSP violation; then the page closes. */
export const finishPage = async ({ page, problems, close }: Awaited<ReturnType<typeof openPage>>, shot: string): Promise<void> => {
  await expectAccessible(page);
  await screenshot(page, shot);
  expect(problems).toEqual([]);
  await close();
};

export const post = async (base: string, path: string, body: unknown, key?: string) => {
  const r = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
    body: JSON.stringify(body),
  });
  return { status: r.status, body: (await r.json()) as any };
};
