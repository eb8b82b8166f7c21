import { describe, expect, it } from 'vitest';
import { ConfigSchema } from '../../core/config/schema';
import { createApiApp } from '../../core/http/app';
import { createChangeFeed } from '../../core/live/change-feed';
import { silentLogger } from '../../core/ports/logger';

// GET /webhooks/events holds one slot of the change feed per stream: a response nobody reads
// (HEAD, a server that dropped it, a stalled client) must give its slot back. The app is
// called in process (app.request): the response is dropped without being read or cancelled.

const setup = () => {
  const config = ConfigSchema.parse({ api: { auth: { enabled: false } } });
  const changes = createChangeFeed({ listing: { listWebhooks: async () => ({ items: [], next: null }) }, maxSubscribers: 5, maxPerConfig: 5, intervalMs: 50, heartbeatMs: 300 });
  const app = createApiApp({
    config,
    enqueue: async () => [],
    hot: {} as never,
    listing: {} as never,
    log: silentLogger,
    dependencies: [],
    clock: { now: () => Date.now() },
    changes,
  });
  return { app, changes };
};

describe('event stream slots', () => {
  it('HEAD answers the event-stream headers and takes no slot', async () => {
    const { app, changes } = setup();
    for (let i = 0; i < 20; i++) {
      const r = await app.request('/webhooks/events?config_id=a', { method: 'HEAD' });
      expect([r.status, r.headers.get('content-type'), r.body]).toEqual([200, 'text/event-stream', null]);
    }
    expect(changes.subscribers()).toBe(0);
    changes.close();
  });

  it('a GET whose response is never read gives its slot back within the stall bound', async () => {
    const { app, changes } = setup();
    const dropped = await Promise.all([0, 1, 2].map(() => app.request('/webhooks/events?config_id=a')));
    expect(dropped.map((r) => r.status)).toEqual([200, 200, 200]);
    expect(changes.subscribers()).toBe(3);
    const deadline = Date.now() + 5000;
    while (changes.subscribers() > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    expect(changes.subscribers()).toBe(0);
    changes.close();
  });
});
