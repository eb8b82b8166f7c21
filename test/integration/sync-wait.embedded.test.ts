import { startTestFleet } from '../helpers/fleet';
import { SYNC_OVERRIDES, syncWaitSuite } from './sync-wait.suite';

// howk-dev's shape: api, worker and scheduler in one process on the in-memory log and hot
// state; the first outcome reaches the waiting request through the in-memory bus.

syncWaitSuite('embedded, in-process', async () => {
  const f = await startTestFleet('memory', { overrides: SYNC_OVERRIDES });
  await f.fleet.security!.ready;
  const adminKey = (await f.fleet.security!.keys!.create({ scopes: ['admin', 'read', 'enqueue'] })).key;
  return {
    apis: [f.baseUrl],
    adminKey,
    boundKey: async (c) => (await f.fleet.security!.keys!.create({ scopes: ['read', 'enqueue'], config_ids: [c] })).key,
    pending: () => f.records('pending'),
    stop: () => f.stop(),
  };
});
