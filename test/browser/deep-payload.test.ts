import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uniq, waitFor } from '../helpers/env';
import { startReceiver, type Receiver } from '../helpers/receiver';
import { expectAccessible, launch, openPage, startDev, type Dev } from './helpers';

// A payload nested 200,000 levels deep (`[[[[…]]]]`, 400 KB, under the enqueue's size limit)
// in the Inspector and the Deliveries details, in Chromium: JSON.stringify of it overflows the
// stack, which used to throw in the render and leave the page without its payload pane.

const DEPTH = 200_000;
const DEEP = '['.repeat(DEPTH) + ']'.repeat(DEPTH);

describe('console: a payload nested 200,000 levels deep (howk-dev)', () => {
  let dev: Dev;
  let browser: Browser;
  let rx: Receiver;
  let config: string;
  let id: string;
  beforeAll(async () => {
    rx = await startReceiver(() => ({ status: 400, body: 'refused' }));
    [dev, browser] = await Promise.all([startDev(), launch()]);
    config = uniq('deep');
    // The raw text, as a producer would send it: JSON.stringify of the payload would overflow here too.
    const res = await fetch(`${dev.base}/webhooks/${config}/enqueue`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: `{"endpoint":${JSON.stringify(rx.url('/deep'))},"payload":${DEEP}}`,
    });
    expect(res.status).toBe(202);
    id = ((await res.json()) as { webhook_id: string }).webhook_id;
    await waitFor(async () => (await fetch(`${dev.base}/deadletter/${id}`)).status === 200, { what: 'the dead letter', timeoutMs: 30_000 });
  });
  afterAll(async () => {
    await browser?.close();
    await dev?.stop();
    await rx?.close();
  });

  it('the Inspector shows the payload to a bounded depth, the whole of it on demand, and the page keeps working', async () => {
    const { page, problems, close } = await openPage(browser);
    await page.goto(`${dev.base}/console/webhooks/${id}`);
    const payload = page.getByTestId('payload');
    await expect.poll(() => payload.count(), { timeout: 15_000 }).toBe(1);
    const shown = (await payload.textContent())!;
    expect(shown.startsWith('[\n  [\n    [')).toBe(true);
    expect(shown).toContain('[…]');
    expect(shown.length).toBeLessThan(10_000);
    expect(await page.getByTestId('payload-note').textContent()).toContain('Nested deeper than 32 levels');
    await page.getByRole('button', { name: 'Show the whole payload as compact JSON' }).click();
    const whole = page.getByTestId('payload-whole');
    await expect.poll(() => whole.count()).toBe(1);
    expect(await whole.textContent()).toBe(DEEP);
    expect(await page.getByRole('button', { name: 'Hide the whole payload' }).getAttribute('aria-expanded')).toBe('true');
    // The rest of the page still answers: the story, the keyboard, replay as a new webhook.
    expect(await page.getByTestId('story').textContent()).toContain('dead-lettered');
    await page.getByRole('button', { name: 'Replay as a new webhook' }).click();
    await expect.poll(() => page.getByRole('status').filter({ hasText: 'Replayed' }).textContent()).toMatch(/Replayed as a new webhook \S+\./);
    await expectAccessible(page);
    await page.keyboard.press('b');
    await expect.poll(() => new URL(page.url()).pathname).toBe('/console/deliveries');
    expect(problems).toEqual([]);
    await close();
  });

  it('the Deliveries details show it the same way', async () => {
    const { page, problems, close } = await openPage(browser);
    await page.goto(`${dev.base}/console/deliveries?config_id=${config}&state=failed`);
    await page.getByRole('button', { name: id }).click();
    const payload = page.getByTestId('payload');
    await expect.poll(() => payload.count(), { timeout: 15_000 }).toBe(1);
    expect(await payload.textContent()).toContain('[…]');
    await page.getByRole('button', { name: 'Show the whole payload as compact JSON' }).click();
    await expect.poll(async () => (await page.getByTestId('payload-whole').textContent())?.length).toBe(DEEP.length);
    expect(problems).toEqual([]);
    await close();
  });
});
