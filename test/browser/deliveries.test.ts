import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uniq, waitFor } from '../helpers/env';
import { startReceiver, type Receiver } from '../helpers/receiver';
import { expectAccessible, finishPage, launch, openPage, post, screenshot, startDev, type Dev } from './helpers';

// The console's Deliveries page on howk-dev (auth off), in Chromium.

const HOSTILE_PAYLOAD = "<script>window.__xss = 'payload'</script>";
const HOSTILE_RESPONSE = '<img src=x onerror="window.__xss = \'response\'"><script>window.__xss = "response"</script>';

describe('console: Deliveries (howk-dev, auth off)', () => {
  let dev: Dev;
  let browser: Browser;
  let rx: Receiver;
  beforeAll(async () => {
    rx = await startReceiver((r) => (r.path === '/reject' ? { status: 400, headers: { 'content-type': 'text/html' }, body: HOSTILE_RESPONSE } : { status: 200 }));
    [dev, browser] = await Promise.all([startDev(), launch()]);
  });
  afterAll(async () => {
    await browser?.close();
    await dev?.stop();
    await rx?.close();
  });

  it('opens without a key and says so; an enqueued webhook shows in the table', async () => {
    const config = uniq('shop');
    const { status, body } = await post(dev.base, `/webhooks/${config}/enqueue`, { endpoint: rx.url('/ok'), payload: { order: 1 } });
    expect(status).toBe(202);
    await waitFor(() => rx.received.length >= 1, { what: 'the delivery' });
    const { page, problems, close } = await openPage(browser);
    await page.goto(`${dev.base}/console`);
    await expect.poll(() => page.getByTestId('auth-off').textContent()).toContain('Authentication is off');
    await expect.poll(() => new URL(page.url()).pathname).toBe('/console/overview');
    await page.goto(`${dev.base}/console/deliveries`);
    await page.getByLabel('Config id').fill(config);
    await page.getByRole('button', { name: 'Show' }).click();
    const row = page.getByRole('row', { name: new RegExp(body.webhook_id) });
    await expect.poll(() => row.textContent(), { timeout: 10_000 }).toContain('delivered');
    expect(await row.textContent()).toContain(rx.url('/ok'));
    expect(new URL(page.url()).searchParams.get('config_id')).toBe(config);
    await finishPage({ page, problems, close }, 'deliveries');
  });

  it('shows a hostile payload and response body as text, never as markup', async () => {
    const config = uniq('xss');
    const { body } = await post(dev.base, `/webhooks/${config}/enqueue`, { endpoint: rx.url('/reject'), payload: { note: HOSTILE_PAYLOAD } });
    await waitFor(async () => (await (await fetch(`${dev.base}/deadletter/${body.webhook_id}`)).status) === 200, { what: 'the dead letter' });
    const { page, problems, close } = await openPage(browser);
    await page.goto(`${dev.base}/console/deliveries?config_id=${config}&state=failed`);
    await page.getByRole('button', { name: body.webhook_id }).click();
    await expect.poll(() => page.getByTestId('payload').textContent()).toContain(HOSTILE_PAYLOAD);
    expect(await page.getByTestId('last-response').textContent()).toBe(HOSTILE_RESPONSE);
    // Text, not elements: no <img> or <script> came out of the data, and nothing ran.
    expect(await page.locator('main img, main script').count()).toBe(0);
    expect(await page.evaluate(() => (window as { __xss?: string }).__xss)).toBeUndefined();
    await finishPage({ page, problems, close }, 'deliveries-details');
  });

  it('filters by state and pages through the listing with the keyboard', async () => {
    const config = uniq('many');
    const webhooks = Array.from({ length: 30 }, (_, i) => ({ endpoint: rx.url(`/ok?n=${i}`), payload: { n: i } }));
    expect((await post(dev.base, `/webhooks/${config}/enqueue/batch`, { webhooks })).status).toBe(202);
    await post(dev.base, `/webhooks/${config}/enqueue`, { endpoint: rx.url('/reject'), payload: { n: 'bad' } });
    const listed = async (q: string) => ((await (await fetch(`${dev.base}/webhooks?config_id=${config}&limit=100${q}`)).json()) as { count: number }).count;
    await waitFor(async () => (await listed('&state=delivered')) === 30 && (await listed('&state=failed')) === 1, { what: 'all deliveries settled' });

    const { page, problems, close } = await openPage(browser);
    await page.goto(`${dev.base}/console/deliveries`);
    await page.getByLabel('Config id').waitFor();
    await page.keyboard.press('/');
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('f-config');
    await page.keyboard.type(config);
    await page.getByLabel('State').selectOption('failed');
    await page.keyboard.press('Enter');
    const rows = page.locator('table.deliveries tbody tr');
    await expect.poll(() => rows.count()).toBe(1);
    expect(await rows.first().textContent()).toContain('failed');

    await page.getByLabel('State').selectOption('');
    await page.getByRole('button', { name: 'Show' }).click();
    await expect.poll(() => page.getByRole('status').first().textContent()).toContain('25 deliveries on this page (page 1)');
    const firstPage = await rows.allTextContents();
    await page.locator('body').click();
    await page.keyboard.press('n');
    await expect.poll(() => page.getByRole('status').first().textContent()).toContain('6 deliveries on this page (page 2)');
    const secondPage = await rows.allTextContents();
    expect(secondPage.filter((r) => firstPage.includes(r))).toEqual([]);
    await page.keyboard.press('p');
    await expect.poll(() => page.getByRole('status').first().textContent()).toContain('page 1');

    await page.keyboard.press('?');
    const help = page.getByRole('dialog', { name: 'Keyboard shortcuts' });
    await expect.poll(() => help.isVisible()).toBe(true);
    expect(await help.textContent()).toContain('Next page');
    // Keys pressed in the help do not reach the page behind it.
    await page.keyboard.press('n');
    await new Promise((r) => setTimeout(r, 300));
    expect(await page.getByRole('status').first().textContent()).toContain('page 1');
    await expectAccessible(page);
    await screenshot(page, 'help', false);
    await page.keyboard.press('Escape');
    await expect.poll(() => help.isVisible()).toBe(false);
    expect(problems).toEqual([]);
    await close();
  });

  it('serves the console with a strict Content-Security-Policy and no inline script', async () => {
    for (const path of ['/console', '/console/deliveries', '/lab']) {
      const r = await fetch(`${dev.base}${path}`);
      expect(r.status).toBe(200);
      const csp = r.headers.get('content-security-policy')!;
      expect(csp).toContain("script-src 'self'");
      expect(csp).not.toMatch(/unsafe-inline|unsafe-eval/);
      expect(r.headers.get('x-content-type-options')).toBe('nosniff');
      const html = await r.text();
      expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
      expect(html).not.toMatch(/\sstyle=|\son[a-z]+=/);
    }
    const js = await fetch(`${dev.base}/console/assets/app.js`);
    expect(js.headers.get('content-type')).toMatch(/^text\/javascript/);
    expect((await fetch(`${dev.base}/console/assets/nope.js`)).status).toBe(404);
    // API routes behind the console's paths are untouched.
    expect((await fetch(`${dev.base}/stats`)).status).toBe(200);
  });
});
