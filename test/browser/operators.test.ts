import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uniq, waitFor } from '../helpers/env';
import { startReceiver, type Receiver } from '../helpers/receiver';
import { expectAccessible, finishPage, launch, openPage, post, screenshot, startDev, type Dev } from './helpers';

// The operators' pages on howk-dev (auth off): Dead letters (one replay, a bulk replay and its
// Stop), Endpoints (pause / resume) and Scripts (source and dry run), in Chromium.

const getJson = async (base: string, path: string) => (await (await fetch(`${base}${path}`)).json()) as any;

/** `n` dead letters of `config` (the receiver answers 400: dead at the first attempt). */
const deadLetters = async (dev: Dev, rx: Receiver, config: string, n: number) => {
  for (let i = 0; i < n; i += 100) {
    const webhooks = Array.from({ length: Math.min(100, n - i) }, (_, j) => ({ endpoint: rx.url('/reject'), payload: { n: i + j } }));
    expect((await post(dev.base, `/webhooks/${config}/enqueue/batch`, { webhooks })).status).toBe(202);
  }
  await waitFor(async () => (await getJson(dev.base, `/deadletter?config_id=${config}&limit=500`)).count >= n, { what: `${n} dead letters`, timeoutMs: 60_000 });
};

describe('console: operators pages (howk-dev, auth off)', () => {
  let dev: Dev;
  let browser: Browser;
  let rx: Receiver;
  let scripts: string;
  const TRANSFORMER = "-- turns a <b>shop</b> event into a webhook\nhowk.post('https://example.com/orders', request.payload)";
  beforeAll(async () => {
    rx = await startReceiver((r) => (r.path.startsWith('/reject') ? { status: 400, body: 'no such order' } : { status: 200 }));
    scripts = await mkdtemp(join(tmpdir(), 'howk-console-transformers-'));
    await writeFile(join(scripts, 'orders.lua'), TRANSFORMER);
    await writeFile(join(scripts, 'orders.json'), JSON.stringify({ config_id: 'shop', allowed_domains: ['example.com'] }));
    [dev, browser] = await Promise.all([startDev({ HOWK_TRANSFORMER_SCRIPT_DIRS: scripts }), launch()]);
  });
  afterAll(async () => {
    await browser?.close();
    await dev?.stop();
    await rx?.close();
    await rm(scripts, { recursive: true, force: true });
  });

  it('replays one dead letter: the new webhook is linked to its original both ways', async () => {
    const config = uniq('dl');
    await deadLetters(dev, rx, config, 3);
    const { page, problems, close } = await openPage(browser);
    await page.goto(`${dev.base}/console/deadletters?config_id=${config}`);
    const first = (await getJson(dev.base, `/deadletter?config_id=${config}`)).items[0].webhook_id as string;
    await page.getByRole('button', { name: `Replay ${first}` }).click();
    await expect.poll(() => page.getByRole('status').first().textContent()).toMatch(new RegExp(`Replayed ${first} as wh_`));
    const replayId = /as (wh_\w+)/.exec((await page.getByRole('status').first().textContent())!)![1]!;
    // The server: the new webhook records its original.
    expect((await getJson(dev.base, `/webhooks/${replayId}/status`)).replay_of).toBe(first);
    // The page: the original's row names its replay (read back from the server after a reload).
    await page.reload();
    await expect.poll(() => page.getByTestId(`dl-${first}`).getByTestId('replays').textContent()).toContain(replayId);
    // And once the replay is dead too, its own row names its original.
    await waitFor(async () => (await fetch(`${dev.base}/deadletter/${replayId}`)).status === 200, { what: 'the replay dead-lettered' });
    await page.getByRole('button', { name: 'Refresh' }).click();
    await expect.poll(() => page.getByTestId(`dl-${replayId}`).textContent()).toContain(`replay of ${first}`);
    await finishPage({ page, problems, close }, 'deadletters');
  });

  it('a bulk replay of 200 dead letters shows its progress and stops: the count shown is the server’s', async () => {
    const config = uniq('bulk');
    await deadLetters(dev, rx, config, 200);
    const { page, problems, close } = await openPage(browser);
    await page.goto(`${dev.base}/console/deadletters?config_id=${config}`);
    await page.getByLabel('Rate').selectOption('10');
    await page.getByRole('button', { name: `Replay all of ${config}` }).click();
    const replayed = page.getByTestId('bulk-replayed');
    await expect.poll(async () => Number(await replayed.textContent()), { timeout: 30_000 }).toBeGreaterThanOrEqual(10);
    expect(await page.getByTestId('bulk-job').textContent()).toContain('replayed of 200');
    expect(await page.getByRole('progressbar').getAttribute('max')).toBe('200');
    await expectAccessible(page);
    await screenshot(page, 'deadletters-bulk', false);
    await page.keyboard.press('q'); // Stop
    await expect.poll(() => page.getByTestId('bulk-job').textContent(), { timeout: 10_000 }).toContain('stopped');
    const jobId = (await page.getByTestId('bulk-job').locator('code').textContent())!;
    const job = await getJson(dev.base, `/deadletter/replay/${jobId}`);
    expect(job.state).toBe('stopped');
    expect(job.replayed).toBeLessThan(200);
    expect(Number(await replayed.textContent())).toBe(job.replayed);
    // The job is in the URL: a reload follows it again.
    expect(new URL(page.url()).searchParams.get('job')).toBe(jobId);
    await page.reload();
    await expect.poll(() => page.getByTestId('bulk-job').textContent()).toContain(`${job.replayed} replayed of 200`);
    // No dead letter replayed twice: as many replays as the job counts, each of another original.
    const listed = (await getJson(dev.base, `/webhooks?config_id=${config}&limit=500`)).items as { replay_of?: string }[];
    const originals = listed.filter((w) => w.replay_of).map((w) => w.replay_of);
    expect(originals.length).toBe(job.replayed);
    expect(new Set(originals).size).toBe(originals.length);
    expect(problems).toEqual([]);
    await close();
  });

  it('pauses and resumes an endpoint from the Endpoints page', async () => {
    const config = uniq('ep');
    expect((await post(dev.base, `/webhooks/${config}/enqueue`, { endpoint: rx.url('/ok'), payload: { a: 1 } })).status).toBe(202);
    await waitFor(() => rx.received.some((r) => r.path === '/ok'), { what: 'the delivery' });
    const { page, problems, close } = await openPage(browser);
    await page.goto(`${dev.base}/console/endpoints?config_id=${config}`);
    const hash = (await getJson(dev.base, `/endpoints?config_id=${config}`)).items[0].endpoint_hash as string;
    const card = page.getByTestId(`ep-${hash}`);
    await expect.poll(() => card.getByTestId('paused').textContent()).toBe('no');
    await card.getByRole('button', { name: 'Pause' }).click();
    await expect.poll(() => card.getByTestId('paused').textContent()).toMatch(/^yes/);
    expect((await getJson(dev.base, `/endpoints/${hash}`)).paused).toBe(true);
    await expectAccessible(page);
    await screenshot(page, 'endpoints');
    await card.getByRole('button', { name: 'Resume' }).click();
    await expect.poll(() => card.getByTestId('paused').textContent()).toBe('no');
    expect((await getJson(dev.base, `/endpoints/${hash}`)).paused).toBe(false);
    expect(problems).toEqual([]);
    await close();
  });

  it('lists scripts, shows one as text and dry-runs it on a sample payload', async () => {
    const config = uniq('sc');
    const lua = "request.headers['X-Order'] = request.payload.order_id\n-- <script>alert(1)</script>\nrequest.payload.wrapped = true";
    const put = await fetch(`${dev.base}/config/${config}/script`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ script: lua }) });
    expect(put.status).toBe(200);
    const { page, problems, close } = await openPage(browser);
    await page.goto(`${dev.base}/console/scripts`);
    await page.getByRole('link', { name: config }).click();
    await expect.poll(() => page.getByTestId('script-source').textContent()).toBe(lua);
    await page.getByRole('button', { name: 'Run dry run' }).click();
    await expect.poll(() => page.getByTestId('dry-run-body').textContent()).toContain('"wrapped":true');
    expect(await page.getByTestId('dry-run-result').textContent()).toContain('1042');
    // The transformers the server loaded, read only, their source as text.
    const tr = page.getByTestId('tr-orders');
    expect(await tr.locator('summary').textContent()).toContain('config shop');
    await tr.locator('summary').click();
    expect(await tr.locator('pre.source').textContent()).toBe(TRANSFORMER);
    expect(await page.locator('main b, main script').count()).toBe(0);
    await finishPage({ page, problems, close }, 'scripts');
  });
});
