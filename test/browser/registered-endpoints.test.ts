import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uniq, waitFor } from '../helpers/env';
import { startReceiver, type Receiver } from '../helpers/receiver';
import { expectAccessible, launch, openPage, post, screenshot, startDev, type Dev } from './helpers';

// The registered model in the console (howk-dev, auth on): an application's endpoints made
// through the Svix API on the Endpoints page with their filters, policy, disabled state and
// health; the Inspector's way from a message's webhook to its message and endpoint; a key bound
// to one application sees that one only; a hostile description stays text.

const HOSTILE = `<img src=x onerror="window.__xss='registered'">`;

const signIn = async (page: Page, key: string) => {
  await page.getByLabel('API key').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
};

describe('console: registered endpoints and message webhooks (howk-dev, auth on)', () => {
  let dev: Dev;
  let browser: Browser;
  let rx: Receiver;
  let admin: string;
  let boundToA: string;
  let boundToB: string;
  const appA = { name: 'Shop <b>A</b>', uid: uniq('shop') };
  const appB = { name: 'Other', uid: uniq('other') };
  let idA = '';
  let idB = '';
  const ep: Record<string, string> = {};
  let webhook = '';
  let msgId = '';
  const get = async (path: string, key: string) => fetch(`${dev.base}${path}`, { headers: { authorization: `Bearer ${key}` } });

  beforeAll(async () => {
    rx = await startReceiver(() => ({ status: 200, body: 'ok' }));
    [dev, browser] = await Promise.all([startDev({ HOWK_API_AUTH_ENABLED: 'true' }), launch()]);
    admin = /admin key for this run: ([^\s"]+)/.exec(dev.proc.output())![1]!;
    const a = await waitFor(
      async () => {
        const r = await post(dev.base, '/api/v1/app', appA, admin);
        return r.status === 201 ? r.body : undefined;
      },
      { what: 'the Svix model loaded' },
    );
    idA = a.id;
    idB = (await post(dev.base, '/api/v1/app', appB, admin)).body.id;
    const make = async (uid: string, body: object) => {
      const r = await post(dev.base, `/api/v1/app/${idA}/endpoint`, { uid, ...body }, admin);
      expect(r.status, JSON.stringify(r.body)).toBe(201);
      ep[uid] = r.body.id;
    };
    await make('paid', { url: rx.url('/paid'), filterTypes: ['invoice.paid'], maxAttempts: 4, throttleRate: 7, description: HOSTILE });
    await make('users', { url: rx.url('/users'), filterTypes: ['user.created', 'user.deleted'] });
    await make('off', { url: rx.url('/off'), disabled: true, description: 'switched off' });
    boundToA = (await post(dev.base, '/keys', { name: 'A reader', scopes: ['read'], config_ids: [idA] }, admin)).body.key;
    boundToB = (await post(dev.base, '/keys', { name: 'B reader', scopes: ['read'], config_ids: [idB] }, admin)).body.key;
    const sent = await post(dev.base, `/api/v1/app/${idA}/msg`, { eventType: 'invoice.paid', payload: { amount: 7 } }, admin);
    expect(sent.status, JSON.stringify(sent.body)).toBe(202);
    msgId = sent.body.id;
    await waitFor(() => rx.received.length >= 1, { what: 'the delivery to /paid' });
    const list = (await (await get(`/webhooks?config_id=${idA}`, admin)).json()) as { items: { webhook_id: string; state: string }[] };
    expect(list.items).toHaveLength(1);
    webhook = list.items[0]!.webhook_id;
    await waitFor(async () => ((await (await get(`/webhooks/${webhook}/status`, admin)).json()) as { state: string }).state === 'delivered', { what: 'delivered' });
  });
  afterAll(async () => {
    await browser?.close();
    await dev?.stop();
    await rx?.close();
  });

  it('lists the three registered endpoints with their filters, policy, disabled state and health; the description stays text', async () => {
    const { page, problems, close } = await openPage(browser);
    await page.goto(`${dev.base}/console/endpoints`);
    await signIn(page, boundToA);
    // A key bound to A is offered A alone.
    const apps = page.getByRole('navigation', { name: 'Applications' });
    await expect.poll(() => apps.locator('li').allTextContents()).toEqual([`${appA.name} ${appA.uid}`]);
    await apps.getByRole('link', { name: appA.name }).click();
    await expect.poll(() => page.getByTestId('reg-status').textContent()).toContain(`3 registered in application ${idA}.`);
    const card = (uid: string) => page.getByTestId(`reg-${ep[uid]}`);
    expect(await card('paid').getByTestId('filter').textContent()).toBe('invoice.paid');
    expect(await card('paid').getByTestId('max-attempts').textContent()).toBe('4');
    expect(await card('paid').getByTestId('throttle').textContent()).toBe('7/s');
    expect(await card('paid').getByTestId('disabled').textContent()).toBe('enabled');
    await expect.poll(() => card('paid').getByTestId('health').textContent()).toMatch(/^circuit CLOSED; 1 recent webhooks, 0 recent errors; 0 in flight, 0 queued$/);
    expect(await card('users').getByTestId('filter').textContent()).toBe('user.created, user.deleted');
    expect(await card('users').getByTestId('max-attempts').textContent()).toBe('server default');
    expect(await card('users').getByTestId('throttle').textContent()).toBe('none');
    expect(await card('off').getByTestId('disabled').textContent()).toBe('disabled');
    expect(await card('off').getByTestId('health').textContent()).toBe('no recent traffic');
    // The hostile description is its own text: no element made of it, nothing ran.
    expect(await card('paid').locator('.desc').textContent()).toBe(HOSTILE);
    expect(await page.locator('main img').count()).toBe(0);
    expect(await page.evaluate(() => (window as { __xss?: string }).__xss)).toBeUndefined();
    // The traffic list is still there, below.
    await expect.poll(() => page.getByRole('heading', { name: 'Seen in traffic' }).count()).toBe(1);
    await expectAccessible(page);
    await screenshot(page, 'endpoints-registered');
    // B's endpoints are not A's key's to read.
    await page.goto(`${dev.base}/console/endpoints?config_id=${idB}`);
    await expect.poll(() => page.getByRole('alert').first().textContent()).toBeTruthy();
    expect(await page.getByRole('heading', { name: 'Registered endpoints' }).count()).toBe(0);
    expect(problems.filter((p) => !/status of 403/.test(p))).toEqual([]);
    await close();
  });

  it("links a message's webhook in the Inspector to its message and endpoint", async () => {
    const { page, problems, close } = await openPage(browser);
    await page.goto(`${dev.base}/console/webhooks/${webhook}`);
    await signIn(page, boundToA);
    await expect.poll(() => page.getByTestId('msg-id').textContent()).toBe(`${msgId} (invoice.paid) of application ${appA.uid}`);
    await expectAccessible(page);
    await page.getByTestId('origin').getByRole('link', { name: 'paid' }).click();
    await expect.poll(() => page.url()).toBe(`${dev.base}/console/endpoints?config_id=${idA}&endpoint=${ep.paid}`);
    await expect.poll(() => page.getByTestId(`reg-${ep.paid}`).getAttribute('aria-current')).toBe('true');
    expect(problems).toEqual([]);
    await close();
  });

  it('shows the first 250 of an application with more, and says so', async () => {
    const many = (await post(dev.base, '/api/v1/app', { name: 'Many', uid: uniq('many') }, admin)).body.id as string;
    for (let i = 0; i < 251; i++) expect((await post(dev.base, `/api/v1/app/${many}/endpoint`, { url: rx.url(`/many/${i}`) }, admin)).status).toBe(201);
    const { page, problems, close } = await openPage(browser);
    await page.goto(`${dev.base}/console/endpoints?config_id=${many}`);
    await signIn(page, admin);
    await expect.poll(() => page.getByTestId('reg-status').textContent()).toBe(`250 registered in application ${many}. There are more: the first 250 are shown.`);
    expect(await page.locator('[data-testid^="reg-ep_"]').count()).toBe(250);
    expect(problems).toEqual([]);
    await close();
  });

  it('answers the way back only to a key that reaches the webhook', async () => {
    const mine = await get(`/webhooks/${webhook}/message`, boundToA);
    expect(mine.status).toBe(200);
    expect(await mine.json()).toMatchObject({
      app_id: idA,
      msg_id: msgId,
      endpoint_id: ep.paid,
      endpoint_uid: 'paid',
      deliveries: [{ endpoint_id: ep.paid, webhook_id: webhook }],
    });
    expect((await get(`/webhooks/${webhook}/message`, boundToB)).status).toBe(404);
    expect((await fetch(`${dev.base}/webhooks/${webhook}/message`)).status).toBe(401);
    expect((await get(`/api/v1/app/${idA}/endpoint`, boundToB)).status).toBe(404);
    // A webhook an enqueue made has no message.
    const plain = (await post(dev.base, `/webhooks/${idA}/enqueue`, { endpoint: rx.url('/plain'), payload: {} }, admin)).body.webhook_id as string;
    expect((await get(`/webhooks/${plain}/message`, admin)).status).toBe(404);
  });
});
