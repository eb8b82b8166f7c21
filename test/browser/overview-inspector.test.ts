import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uniq, waitFor } from '../helpers/env';
import { startReceiver, type Receiver } from '../helpers/receiver';
import { expectAccessible, finishPage, launch, openPage, post, screenshot, startDev, type Dev } from './helpers';

// The Overview, live Deliveries and the Inspector on howk-dev (auth off), in Chromium. Short
// retry delays and a low circuit threshold make a retried, a deferred (429), a parked
// (circuit open) and a dead-lettered webhook within seconds.

const HOSTILE = "<script>window.__xss = 'inspector'</script>";

describe('console: Overview, live Deliveries, Inspector (howk-dev, auth off)', () => {
  let dev: Dev;
  let browser: Browser;
  let rx: Receiver;
  const tries = new Map<string, number>();
  beforeAll(async () => {
    rx = await startReceiver((r) => {
      const n = (tries.get(r.path) ?? 0) + 1;
      tries.set(r.path, n);
      if (r.path.startsWith('/flaky')) return n <= 2 ? { status: 503, body: 'busy, try later' } : { status: 200, body: 'ok' };
      if (r.path.startsWith('/busy')) return n === 1 ? { status: 429, headers: { 'retry-after': '1' } } : { status: 200 };
      if (r.path.startsWith('/down')) return { status: 503, body: `down ${HOSTILE}` };
      return { status: 200, body: 'ok' };
    });
    [dev, browser] = await Promise.all([
      startDev({
        HOWK_RETRY_BASE_DELAY: '300ms',
        HOWK_RETRY_JITTER: '0',
        HOWK_CIRCUIT_BREAKER_FAILURE_THRESHOLD: '3',
        HOWK_CIRCUIT_BREAKER_RECOVERY_TIMEOUT: '4s',
        HOWK_CIRCUIT_BREAKER_PROBE_INTERVAL: '1s',
        HOWK_API_EVENTS_POLL_INTERVAL: '200ms',
      }),
      launch(),
    ]);
  });
  afterAll(async () => {
    await browser?.close();
    await dev?.stop();
    await rx?.close();
  });

  const statusOf = async (id: string) => (await (await fetch(`${dev.base}/webhooks/${id}/status`)).json()) as { state: string; history: { outcome: string }[] };

  it('opens on the Overview: charts of the counters, the gauges, and the summary in an aria-live region', async () => {
    const config = uniq('ov');
    for (let i = 0; i < 3; i++) await post(dev.base, `/webhooks/${config}/enqueue`, { endpoint: rx.url('/ok'), payload: { i } });
    await waitFor(() => (tries.get('/ok') ?? 0) >= 3, { what: 'three deliveries' });
    const { page, problems, close } = await openPage(browser);
    await page.goto(`${dev.base}/console`);
    await expect.poll(() => new URL(page.url()).pathname).toBe('/console/overview');
    const summary = page.getByTestId('summary');
    await expect.poll(() => summary.textContent(), { timeout: 15_000 }).toMatch(/Last hour: [3-9]\d* enqueued, [3-9]\d* delivered/);
    expect(await summary.getAttribute('aria-live')).toBe('polite');
    // howk-dev reads every gauge from its own log and guards: none is "not available".
    await expect
      .poll(() => summary.textContent(), { timeout: 15_000 })
      .toMatch(/In flight: \d+; retry queue: \d+; slow lane: 0; consumer lag: 0; endpoints with an open circuit: 0\./);
    expect(await summary.textContent()).not.toContain('not available');
    expect(await page.locator('.overview canvas').count()).toBeGreaterThanOrEqual(2);
    expect(await page.getByText('Retry queue', { exact: true }).count()).toBe(1);
    await expectAccessible(page);
    // `o` comes back here from another page; `?` lists it.
    await page.keyboard.press('d');
    await expect.poll(() => new URL(page.url()).pathname).toBe('/console/deliveries');
    await page.keyboard.press('o');
    await expect.poll(() => new URL(page.url()).pathname).toBe('/console/overview');
    await page.keyboard.press('?');
    await expect.poll(() => page.getByRole('dialog').textContent()).toContain('Go to the Overview');
    await page.keyboard.press('Escape');
    expect(problems).toEqual([]);
    await close();
  });

  it('shows a new webhook and its state changes on the Deliveries page without a reload', async () => {
    const config = uniq('live');
    await post(dev.base, `/webhooks/${config}/enqueue`, { endpoint: rx.url('/ok'), payload: { first: true } });
    const { page, problems, close } = await openPage(browser);
    await page.goto(`${dev.base}/console/deliveries?config_id=${config}`);
    await expect.poll(() => page.getByTestId('live').textContent(), { timeout: 10_000 }).toContain('Live:');
    await expect.poll(() => page.locator('tbody tr').count()).toBe(1);
    await page.evaluate(() => ((window as { __marker?: number }).__marker = 1));
    const { body } = await post(dev.base, `/webhooks/${config}/enqueue`, { endpoint: rx.url('/flaky-live'), payload: { second: true } });
    const row = page.getByRole('row', { name: new RegExp(body.webhook_id) });
    await expect.poll(() => row.count(), { timeout: 10_000 }).toBe(1);
    await expect.poll(() => row.textContent(), { timeout: 15_000 }).toContain('delivered');
    await expect.poll(() => page.getByTestId('live').textContent()).toMatch(/Since loaded: 1 new, [1-9]\d* changed\./);
    // The same document: nothing reloaded the page.
    expect(await page.evaluate(() => (window as { __marker?: number }).__marker)).toBe(1);
    await finishPage({ page, problems, close }, 'deliveries-live');
  });

  it("tells a retried and a deferred (429) webhook's attempts in plain English", async () => {
    const config = uniq('insp');
    const retried = (await post(dev.base, `/webhooks/${config}/enqueue`, { endpoint: rx.url('/flaky'), payload: { n: 1 } })).body.webhook_id as string;
    const deferred = (await post(dev.base, `/webhooks/${config}/enqueue`, { endpoint: rx.url('/busy'), payload: { n: 2 } })).body.webhook_id as string;
    await waitFor(async () => (await statusOf(retried)).state === 'delivered' && (await statusOf(deferred)).state === 'delivered', { what: 'both delivered', timeoutMs: 30_000 });
    const { page, problems, close } = await openPage(browser);
    await page.goto(`${dev.base}/console/deliveries?config_id=${config}`);
    await page.getByRole('link', { name: `Inspect ${retried}` }).click();
    await expect.poll(() => new URL(page.url()).pathname).toBe(`/console/webhooks/${retried}`);
    const story = page.getByTestId('story');
    await expect.poll(() => story.textContent()).toContain('delivered.');
    const lines = await story.locator('li').allTextContents();
    expect(lines[0]).toMatch(/^Attempt 1 at \d\d:\d\d:\d\d got 503 after [\d.]+ m?s; the next try is at \d\d:\d\d:\d\d, 300 ms later: backoff 300 ms × 2⁰\.$/);
    expect(lines[1]).toMatch(/^Attempt 2 at .* got 503 .*; the next try is at .*, 600 ms later: backoff 300 ms × 2¹\.$/);
    expect(lines[2]).toMatch(/^Attempt 3 at .* got 200 after .*: delivered\.$/);
    expect(await page.getByTestId('response').textContent()).toBe('ok');
    // The signature header as the last attempt sent it (howk-dev signs with its default secret).
    expect(await page.getByTestId('header-webhook-signature').textContent()).toMatch(/^v1,[A-Za-z0-9+/=]+$/);
    expect(await page.getByTestId('header-webhook-timestamp').textContent()).toMatch(/^\d{10}$/);
    await expectAccessible(page);
    await screenshot(page, 'inspector');

    await page.goto(`${dev.base}/console/webhooks/${deferred}`);
    await expect.poll(() => story.textContent()).toContain('delivered.');
    const d = await story.locator('li').allTextContents();
    expect(d[0]).toMatch(/^Attempt 1 at \d\d:\d\d:\d\d got 429 with Retry-After 1: deferred, next try at \d\d:\d\d:\d\d, no attempt spent, 9 deferrals left\.$/);
    expect(d[1]).toMatch(/^Attempt 2 at .* got 200 .*: delivered\.$/);
    expect(problems).toEqual([]);
    await close();
  });

  it('tells a parked (circuit open) and a dead-lettered webhook, shows its <script> payload as text, and replays it', async () => {
    const config = uniq('down');
    const id = (await post(dev.base, `/webhooks/${config}/enqueue`, { endpoint: rx.url('/down'), payload: { note: HOSTILE }, max_attempts: 5 })).body.webhook_id as string;
    await waitFor(async () => (await statusOf(id)).state === 'exhausted', { what: 'exhausted', timeoutMs: 60_000 });
    const { page, problems, close } = await openPage(browser);
    await page.goto(`${dev.base}/console/webhooks/${id}`);
    const story = page.getByTestId('story');
    await expect.poll(() => story.textContent()).toContain('dead-lettered (exhausted)');
    const lines = await story.locator('li').allTextContents();
    expect(
      lines.some((l) => /^At \d\d:\d\d:\d\d, circuit open: parked until \d\d:\d\d:\d\d, no attempt spent\.$/.test(l)),
      lines.join('\n'),
    ).toBe(true);
    expect(lines.at(-1)).toMatch(/^Attempt 5 at .* got 503 after .*: that was the last of 5 attempts: dead-lettered \(exhausted\)\.$/);
    await expect.poll(() => page.getByTestId('payload').textContent()).toContain(HOSTILE);
    expect(await page.getByTestId('response').textContent()).toContain(HOSTILE);
    expect(await page.locator('main script').count()).toBe(0);
    expect(await page.evaluate(() => (window as { __xss?: string }).__xss)).toBeUndefined();
    await expectAccessible(page);
    await screenshot(page, 'inspector-dead');
    await page.getByRole('button', { name: 'Replay as a new webhook' }).click();
    await expect.poll(() => page.getByRole('status').filter({ hasText: 'Replayed' }).textContent()).toMatch(/Replayed as a new webhook \S+\./);
    await page.getByRole('link', { name: 'Open it' }).click();
    await expect.poll(() => page.locator('.facts').textContent()).toContain(`Replay of${id}`);
    expect(problems).toEqual([]);
    await close();
  });

  it('draws the traffic of the tests above on the Overview (its screenshot)', async () => {
    const { page, problems, close } = await openPage(browser);
    await page.goto(`${dev.base}/console/overview`);
    await expect.poll(() => page.getByTestId('summary').textContent(), { timeout: 15_000 }).toMatch(/[1-9]\d* dead-lettered/);
    await finishPage({ page, problems, close }, 'overview');
  });
});
