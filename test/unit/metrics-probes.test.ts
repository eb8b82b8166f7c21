import { afterEach, describe, expect, it } from 'vitest';
import { createNodeMetrics } from '../../workers/node/metrics';
import { serveMetrics } from '../../workers/node/metrics-server';

// howk-worker, howk-scheduler and howk-reconciler --watch have no API: their container and
// Kubernetes probes are answered on metrics.port.
describe('probes on the metrics port', () => {
  let close: (() => Promise<void>) | undefined;
  afterEach(async () => close?.());

  const start = async (redisUp: boolean) => {
    const m = await serveMetrics(createNodeMetrics(), 0, '127.0.0.1', [
      { name: 'kafka', check: async () => {} },
      {
        name: 'redis',
        check: async () => {
          if (!redisUp) throw new Error('ECONNREFUSED');
        },
      },
    ]);
    close = m.close;
    return new URL(m.url).origin;
  };

  it('answers /health while alive and /ready only when Kafka and Redis answer', async () => {
    const up = await start(true);
    expect((await fetch(`${up}/health`)).status).toBe(200);
    const ready = await fetch(`${up}/ready`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({ status: 'ready' });
    expect((await fetch(`${up}/metrics`)).status).toBe(200);
    await close?.();
    close = undefined;

    const down = await start(false);
    expect((await fetch(`${down}/health`)).status).toBe(200);
    const notReady = await fetch(`${down}/ready`);
    expect(notReady.status).toBe(503);
    expect(await notReady.json()).toMatchObject({
      status: 'not_ready',
      dependencies: [
        { name: 'kafka', ok: true },
        { name: 'redis', ok: false },
      ],
    });
  });
});
