import { Hono, type Context } from 'hono';
import { NotConfiguredError, ValidationError } from '../../errors/errors';
import { guardParams } from '../../pipeline/guard-params';
import { resumeAndDrain } from '../../pipeline/pause';
import type { PauseScope } from '../../ports/guards';
import type { ApiDeps } from '../deps';
import { checkConfigId } from '../../domain/config-id';

const checkHash = (h: string): void => {
  if (!/^[0-9a-f]{32}$/.test(h)) throw new ValidationError('endpoint hash must be 32 lowercase hex characters (the endpoint_hash of a webhook)', 'hash');
};

/** Operator routes: circuit state and reset, pause and resume of an endpoint or a config. */
export const endpointRoutes = (d: ApiDeps) => {
  const app = new Hono();
  const params = guardParams(d.config);
  const guards = () => {
    if (!d.guards || !d.producer) throw new NotConfiguredError('endpoint administration is not available on this server');
    return { guards: d.guards, producer: d.producer };
  };
  const view = async (c: Context, hash: string) => c.json(await guards().guards.endpoint(hash, d.clock.now(), params));
  const pause = async (c: Context, scope: PauseScope) => {
    await guards().guards.pause(scope);
    return c.json({ [scope.kind === 'endpoint' ? 'endpoint_hash' : 'config_id']: scope.id, paused: true });
  };
  const resume = async (c: Context, scope: PauseScope) => {
    const g = guards();
    const r = await resumeAndDrain(g.guards, g.producer, d.config.kafka.topics.pending, scope, () => d.clock.now());
    // `drain`: how this resume ended (a pause that came back during it wins: paused again).
    return c.json({ [scope.kind === 'endpoint' ? 'endpoint_hash' : 'config_id']: scope.id, paused: r.outcome === 'paused', released: r.released, drain: r.outcome });
  };

  app.get('/endpoints/:hash', async (c) => {
    checkHash(c.req.param('hash'));
    return view(c, c.req.param('hash'));
  });
  app.post('/endpoints/:hash/circuit/reset', async (c) => {
    checkHash(c.req.param('hash'));
    await guards().guards.resetCircuit(c.req.param('hash'));
    return view(c, c.req.param('hash'));
  });
  app.post('/endpoints/:hash/pause', async (c) => {
    checkHash(c.req.param('hash'));
    return pause(c, { kind: 'endpoint', id: c.req.param('hash') });
  });
  app.post('/endpoints/:hash/resume', async (c) => {
    checkHash(c.req.param('hash'));
    return resume(c, { kind: 'endpoint', id: c.req.param('hash') });
  });
  app.post('/configs/:config/pause', async (c) => {
    checkConfigId(c.req.param('config'));
    return pause(c, { kind: 'config', id: c.req.param('config') });
  });
  app.post('/configs/:config/resume', async (c) => {
    checkConfigId(c.req.param('config'));
    return resume(c, { kind: 'config', id: c.req.param('config') });
  });
  return app;
};
