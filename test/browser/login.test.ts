import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uniq, waitFor } from '../helpers/env';
import { expectAccessible, launch, openPage, post, screenshot, startDev, type Dev } from './helpers';

// Key login: howk-dev with auth on (it prints an admin key for the run); the console asks for
// a key, keeps it for the tab, and a read key sees the Deliveries table.

describe('console: key login (howk-dev, auth on)', () => {
  let dev: Dev;
  let browser: Browser;
  let readKey: string;
  let webhookId: string;
  const config = uniq('auth');
  beforeAll(async () => {
    [dev, browser] = await Promise.all([startDev({ HOWK_API_AUTH_ENABLED: 'true', HOWK_WORKER_DRY_RUN: 'true' }), launch()]);
    const admin = /admin key for this run: ([^\s"]+)/.exec(dev.proc.output())?.[1];
    expect(admin).toBeTruthy();
    const created = await post(dev.base, '/keys', { name: 'console reader', scopes: ['read'] }, admin);
    expect(created.status).toBe(201);
    readKey = created.body.key;
    const enq = await post(dev.base, `/webhooks/${config}/enqueue`, { endpoint: 'https://example.com/hook', payload: { n: 1 } }, admin);
    expect(enq.status).toBe(202);
    webhookId = enq.body.webhook_id;
    await waitFor(async () => (await fetch(`${dev.base}/webhooks/${webhookId}/status`, { headers: { authorization: `Bearer ${readKey}` } })).status === 200, {
      what: 'the status',
    });
  });
  afterAll(async () => {
    await browser?.close();
    await dev?.stop();
  });

  it('asks for a key, refuses a wrong one, and shows the table to a read key for the rest of the tab', async () => {
    const { page, problems, close } = await openPage(browser);
    await page.goto(`${dev.base}/console/deliveries?config_id=${config}`);
    const keyField = page.getByLabel('API key');
    await keyField.waitFor();
    expect(await page.locator('table').count()).toBe(0);
    await expectAccessible(page);
    await screenshot(page, 'login');

    await keyField.fill('howk_not_a_key');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => page.getByRole('alert').first().textContent()).toContain('The server refused the key');

    await page.getByLabel('API key').fill(readKey);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => page.getByRole('row', { name: new RegExp(webhookId) }).count()).toBe(1);
    expect(await page.getByTestId('signed-in').textContent()).toBe(`Signed in with key …${readKey.slice(-4)}`);
    expect(await page.evaluate(() => sessionStorage.length)).toBe(1);

    // The key lasts for the tab (a reload keeps it), not beyond: another tab asks again.
    await page.reload();
    await expect.poll(() => page.getByRole('row', { name: new RegExp(webhookId) }).count()).toBe(1);
    const other = await page.context().newPage();
    await other.goto(`${dev.base}/console/deliveries?config_id=${config}`);
    await other.getByLabel('API key').waitFor();

    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('API key').waitFor();
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
    expect(problems).toEqual([]);
    await close();
  });
});
