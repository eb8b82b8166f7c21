import { createEdgeApp, type EdgeEnv } from './app';
import type { ExecutionContext } from './runtime';

export { DomainGate } from './gate/domain-gate';

// One app per isolate (per env object): config parsing and key import happen once.
const apps = new WeakMap<object, ReturnType<typeof createEdgeApp>>();

export default {
  async fetch(req: Request, env: EdgeEnv, ctx: ExecutionContext): Promise<Response> {
    let app = apps.get(env);
    if (!app) {
      app = createEdgeApp(env);
      apps.set(env, app);
      app.catch(() => apps.delete(env));
    }
    return (await app).fetch(req, env, ctx);
  },
};
