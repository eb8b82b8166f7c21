import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLab, type Counters } from '../../core/lab';
import { finishPage, launch, openPage, startDev, type Dev } from './helpers';

// The Lab page on howk-dev, in Chromium: core/lab in the browser must tell exactly the story
// the engine tells in Node for the same scenario and seed.

const SHOWN: (keyof Counters)[] = ['events', 'deliveries', 'inFlight', 'waiting', 'queued', 'delivered', 'deadLetters', 'requests', 'failed', 'deferred', 'effects', 'duplicates'];

const counters = async (page: Page): Promise<Record<string, number>> =>
  Object.fromEntries(await Promise.all(SHOWN.map(async (k) => [k, Number(await page.locator(`[data-counter="${k}"]`).textContent())] as const)));

const expected = (c: Counters) => Object.fromEntries(SHOWN.map((k) => [k, c[k]]));

/** Paused, then `scenario` with `seed` loaded at time 0. */
const loadPaused = async (page: Page, base: string, scenario: string, seed: number) => {
  await page.goto(`${base}/lab`);
  await page.locator('body').click();
  await page.keyboard.press('p');
  await expect.poll(() => page.getByTestId('clock').textContent()).toContain('paused');
  await page.getByLabel('Scenario', { exact: true }).selectOption(scenario);
  await page.getByLabel('Seed').fill(String(seed));
  await page.getByRole('button', { name: 'Load' }).click();
  await expect.poll(() => page.getByTestId('clock').textContent()).toBe(`0.0 s · seed ${seed} · paused`);
};

describe('the Lab page (howk-dev)', () => {
  let dev: Dev;
  let browser: Browser;
  beforeAll(async () => {
    [dev, browser] = await Promise.all([startDev(), launch()]);
  });
  afterAll(async () => {
    await browser?.close();
    await dev?.stop();
  });

  it('stepping a scenario shows the counters and cards of the engine for the same scenario and seed', async () => {
    const { page, problems, close } = await openPage(browser);
    await loadPaused(page, dev.base, 'failure', 7);
    for (let i = 0; i < 12; i++) await page.keyboard.press('.');
    await expect.poll(() => page.getByTestId('clock').textContent()).toBe('12.0 s · seed 7 · paused');
    // To the millisecond: paused means no frame moved the clock.
    expect(await page.getByTestId('clock').getAttribute('data-now')).toBe('12000');

    const lab = createLab({ scenario: 'failure', seed: 7 });
    lab.step(12_000);
    const want = lab.snapshot();
    expect(await counters(page)).toEqual(expected(want.counters));
    const billing = want.subscribers.find((s) => s.id === 'billing')!;
    const card = page.locator('[data-subscriber="billing"]');
    expect(await card.locator('[data-field="failed"]').textContent()).toBe(String(billing.failed));
    expect(await card.locator('[data-field="circuit"]').textContent()).toContain(billing.circuit.state === 'OPEN' ? 'open' : 'half-open');
    // The log ring shows the engine's lines, newest first.
    expect(await page.locator('ol.log li').first().textContent()).toContain(want.log.at(-1)!.text);
    await finishPage({ page, problems, close }, 'lab');
  });

  it('the keyboard drives the controls, and each control is announced in words', async () => {
    const { page, problems, close } = await openPage(browser);
    await loadPaused(page, dev.base, 'none', 1);
    const events = () => page.locator('[data-counter="events"]').textContent();
    await page.keyboard.press('s');
    await expect.poll(events).toBe('1');
    expect(await page.getByTestId('announce').textContent()).toMatch(/^Sent one event\. Simulated clock at 0\.0 s, paused\..*1 events sent, making 3 deliveries/s);
    await page.keyboard.press('b');
    await expect.poll(events).toBe('11');
    await page.keyboard.press('f');
    await expect.poll(() => page.locator('[data-subscriber="billing"] .behaviour').textContent()).toMatch(/^failing/);
    for (let i = 0; i < 5; i++) await page.keyboard.press('.');
    expect(Number(await page.locator('[data-subscriber="billing"] [data-field="failed"]').textContent())).toBeGreaterThan(0);
    await page.keyboard.press('r');
    await expect.poll(() => page.locator('[data-subscriber="billing"] .behaviour').textContent()).toMatch(/^healthy/);
    await page.keyboard.press('4');
    await expect.poll(() => page.getByRole('button', { name: '×4 (4)' }).getAttribute('aria-pressed')).toBe('true');
    await page.keyboard.press('p');
    await expect.poll(() => page.getByTestId('clock').textContent()).toContain('running ×4');
    // Running, the animation frames move the simulated clock on from the 5 s it was stepped to.
    await expect.poll(async () => Number(await page.getByTestId('clock').getAttribute('data-now'))).toBeGreaterThan(5000);
    await page.keyboard.press('p');
    await page.keyboard.press('0');
    await expect.poll(() => page.getByTestId('clock').textContent()).toBe('0.0 s · seed 1 · paused');
    await expect.poll(events).toBe('0');
    expect(problems).toEqual([]);
    await close();
  });

  it('replays a dead letter as a new webhook and shows the signed-payload demo as text', async () => {
    const { page, problems, close } = await openPage(browser);
    await loadPaused(page, dev.base, 'failure', 1);
    const lab = createLab({ scenario: 'failure', seed: 1 });
    lab.step(60_000);
    const dead = lab.snapshot().deadLetters;
    expect(dead.length).toBeGreaterThan(0);
    for (let i = 0; i < 60; i++) await page.keyboard.press('.');
    await expect.poll(() => page.locator('[data-counter="deadLetters"]').textContent()).toBe(String(dead.length));
    const deliveries = Number(await page.locator('[data-counter="deliveries"]').textContent());
    await page.getByRole('button', { name: `Replay ${dead[0]!.id}` }).click();
    await expect.poll(() => page.locator('[data-counter="deliveries"]').textContent()).toBe(String(deliveries + 1));
    expect(await page.locator('ol.log li', { hasText: `Dead letter ${dead[0]!.id} replayed as wh-` }).count()).toBe(1);

    const body = '{"note":"<script>window.__xss = 1</script>"}';
    await page.getByLabel('Body to sign').fill(body);
    await page.getByRole('button', { name: 'Sign', exact: true }).click();
    await expect.poll(() => page.getByTestId('verify-result').textContent()).toContain('Both signatures are valid');
    expect(await page.getByTestId('signed-standard').textContent()).toBe(`wh-0001.1768383000.${body}`);
    await page.getByRole('button', { name: 'Change one character' }).click();
    await expect.poll(() => page.getByTestId('verify-result').textContent()).toContain('rejected: bad_signature');
    expect(await page.locator('main script').count()).toBe(0);
    expect(await page.evaluate(() => (window as { __xss?: number }).__xss)).toBeUndefined();
    await finishPage({ page, problems, close }, 'lab-signing');
  });
});
