import { z } from 'zod';
import { errorMessage } from '../../errors/errors';
import type { DependencyCheck } from '../deps';
import type { Route } from '../route';

const timed = async (d: DependencyCheck) => {
  const t0 = Date.now();
  try {
    await d.check();
    return { name: d.name, ok: true, latency_ms: Date.now() - t0 };
  } catch (e) {
    return { name: d.name, ok: false, latency_ms: Date.now() - t0, error: errorMessage(e) };
  }
};

const Check = z.object({ ok: z.boolean(), latency_ms: z.number(), error: z.string().optional() });
const Readiness = z.object({ status: z.string(), dependencies: z.array(Check.extend({ name: z.string() })) });

/** Open routes: liveness, readiness, dependency checks. */
export const healthRoutes: Route[] = [
  {
    method: 'get',
    path: '/health',
    tag: 'health',
    summary: 'Liveness',
    access: 'open',
    responses: { '200': { description: 'alive', schema: z.object({ status: z.literal('ok') }) } },
    handler: () => [(c) => c.json({ status: 'ok' })],
  },
  {
    method: 'get',
    path: '/ready',
    tag: 'health',
    summary: 'Readiness: every dependency answers',
    access: 'open',
    responses: { '200': { description: 'ready', schema: Readiness }, '503': { description: 'not ready', schema: Readiness } },
    handler: (d) => [
      async (c) => {
        const checks = await Promise.all(d.dependencies.map(timed));
        const ok = checks.every((x) => x.ok);
        return c.json({ status: ok ? 'ready' : 'not_ready', dependencies: checks }, ok ? 200 : 503);
      },
    ],
  },
  {
    method: 'get',
    path: '/health/dependencies',
    tag: 'health',
    summary: 'Per-dependency checks',
    access: 'open',
    responses: {
      '200': { description: 'all ok', schema: z.object({ status: z.string(), dependencies: z.record(z.string(), Check) }) },
      '503': { description: 'degraded', schema: z.object({ status: z.string(), dependencies: z.record(z.string(), Check) }) },
    },
    handler: (d) => [
      async (c) => {
        const checks = await Promise.all(d.dependencies.map(timed));
        const ok = checks.every((x) => x.ok);
        return c.json({ status: ok ? 'ok' : 'degraded', dependencies: Object.fromEntries(checks.map(({ name, ...r }) => [name, r])) }, ok ? 200 : 503);
      },
    ],
  },
];
