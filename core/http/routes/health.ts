import { Hono } from 'hono';
import { errorMessage } from '../../errors/errors';
import type { ApiDeps, DependencyCheck } from '../deps';

const timed = async (d: DependencyCheck) => {
  const t0 = Date.now();
  try {
    await d.check();
    return { name: d.name, ok: true, latency_ms: Date.now() - t0 };
  } catch (e) {
    return { name: d.name, ok: false, latency_ms: Date.now() - t0, error: errorMessage(e) };
  }
};

/** Open routes: liveness, readiness, dependency checks. */
export const healthRoutes = (d: ApiDeps) => {
  const app = new Hono();
  app.get('/health', (c) => c.json({ status: 'ok' }));

  app.get('/ready', async (c) => {
    const checks = await Promise.all(d.dependencies.map(timed));
    const ok = checks.every((x) => x.ok);
    return c.json({ status: ok ? 'ready' : 'not_ready', dependencies: checks }, ok ? 200 : 503);
  });

  app.get('/health/dependencies', async (c) => {
    const checks = await Promise.all(d.dependencies.map(timed));
    const ok = checks.every((x) => x.ok);
    return c.json({ status: ok ? 'ok' : 'degraded', dependencies: Object.fromEntries(checks.map(({ name, ...r }) => [name, r])) }, ok ? 200 : 503);
  });
  return app;
};
