import type { Page } from 'playwright-core';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uniq, waitFor } from '../helpers/env';
import { startReceiver, type Receiver } from '../helpers/receiver';
import { expectAccessible, launch, openPage, post, screenshot, startDev, type Dev } from './helpers';

// The operators' pages with auth on: a read key sees the actions disabled, with the reason
// (and the API refuses them); an admin key acts, and manages keys (the secret shown once).

const signIn = async (page: Page, key: string) => {
  await page.getByLabel('API key').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
};

describe('console: operators pages (howk-dev, auth on)', () => {
  let dev: Dev;
  let browser: Browser;
  let rx: Receiver;
  let admin: string;
  let readKey: string;
  let hash: string;
  const config = uniq('ops');
  const get = async (path: string, key: string) => fetch(`${dev.base}${path}`, { headers: { authorization: `Bearer ${key}` } });
  beforeAll(async () => {
    rx = await startReceiver(() => ({ status: 200 }));
    [dev, browser] = await Promise.all([startDev({ HOWK_API_AUTH_ENABLED: 'true' }), launch()]);
    admin = /admin key for this run: ([^\s"]+)/.exec(dev.proc.output())![1]!;
    readKey = (await post(dev.base, '/keys', { name: 'console reader', scopes: ['read'] }, admin)).body.key;
    expect((await post(dev.base, `/webhooks/${config}/enqueue`, { endpoint: rx.url('/hook'), payload: { a: 1 } }, admin)).status).toBe(202);
    await waitFor(() => rx.received.length >= 1, { what: 'the delivery' });
    hash = ((await (await get(`/endpoints?config_id=${config}`, readKey)).json()) as any).items[0].endpoint_hash;
  });
  afterAll(async () => {
    await browser?.close();
    await dev?.stop();
    await rx?.close();
  });

  it('a read key sees the endpoint but its buttons are disabled, with the reason; the API refuses it too', async () => {
    const { page, problems, close } = await openPage(browser);
    await page.goto(`${dev.base}/console/endpoints?config_id=${config}`);
    await signIn(page, readKey);
    const card = page.getByTestId(`ep-${hash}`);
    await expect.poll(() => card.getByTestId('paused').textContent()).toBe('no');
    expect(await card.getByRole('button', { name: 'Pause' }).isDisabled()).toBe(true);
    expect(await page.getByRole('button', { name: 'Pause config' }).isDisabled()).toBe(true);
    expect(await page.locator('.why').first().textContent()).toContain('actions need a key with the admin scope');
    expect((await post(dev.base, `/endpoints/${hash}/pause`, {}, readKey)).status).toBe(403);
    await expectAccessible(page);
    await screenshot(page, 'endpoints-read-key');
    await page.goto(`${dev.base}/console/keys`);
    await expect.poll(() => page.getByRole('alert').first().textContent()).toContain('Managing keys needs an admin key');
    expect(problems).toEqual([]);
    await close();
  });

  it('an admin key pauses the endpoint from the page', async () => {
    const { page, problems, close } = await openPage(browser);
    await page.goto(`${dev.base}/console/endpoints?config_id=${config}`);
    await signIn(page, admin);
    const card = page.getByTestId(`ep-${hash}`);
    await card.getByRole('button', { name: 'Pause' }).click();
    await expect.poll(() => card.getByTestId('paused').textContent()).toMatch(/^yes/);
    expect(((await (await get(`/endpoints/${hash}`, admin)).json()) as any).paused).toBe(true);
    await card.getByRole('button', { name: 'Resume' }).click();
    await expect.poll(() => card.getByTestId('paused').textContent()).toBe('no');
    expect(problems).toEqual([]);
    await close();
  });

  it('creates a key (the secret shown once, and it works), lists it and revokes it', async () => {
    const { page, problems, close } = await openPage(browser);
    await page.goto(`${dev.base}/console/keys`);
    await signIn(page, admin);
    await page.getByLabel('Name').fill('billing reader');
    await page.getByRole('button', { name: 'Create key' }).click();
    const secret = (await page.getByTestId('new-key-secret').textContent())!;
    expect(secret).toMatch(/^howk_[0-9a-f]{16}_/);
    const id = secret.split('_')[1]!;
    expect((await get(`/webhooks?config_id=${config}`, secret)).status).toBe(200);
    await expect.poll(() => page.getByTestId(`key-${id}`).textContent()).toContain('billing reader');
    await expectAccessible(page);
    await screenshot(page, 'keys');
    // Once: a reload lists the key, never its secret.
    await page.reload();
    await expect.poll(() => page.getByTestId(`key-${id}`).textContent()).toContain('active');
    expect(await page.locator('body').textContent()).not.toContain(secret);
    await page.getByRole('button', { name: 'Revoke billing reader' }).click();
    await page.getByRole('button', { name: 'Confirm revoke' }).click();
    await expect.poll(() => page.getByTestId(`key-${id}`).textContent()).toContain('revoked');
    await waitFor(async () => (await get(`/webhooks?config_id=${config}`, secret)).status === 401, { what: 'the revoked key refused' });
    expect(problems).toEqual([]);
    await close();
  });
});
