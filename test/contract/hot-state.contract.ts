import { expect, it } from 'vitest';
import type { HotConnection, HotState } from '../../core/ports/hot-state';
import { roleContract, type MakeHotState } from './hot-state.fixtures';
import { deadLettersContract } from './hot-state.contract-deadletters';
import { idempotencyContract } from './hot-state.contract-idempotency';
import { listingContract } from './hot-state.contract-listing';
import { orphansContract } from './hot-state.contract-orphans';
import { outstandingContract } from './hot-state.contract-outstanding';
import { rebuildContract } from './hot-state.contract-rebuild';
import { retriesContract } from './hot-state.contract-retries';
import { shardsContract } from './hot-state.contract-shards';
import { statsContract } from './hot-state.contract-stats';
import { statusContract } from './hot-state.contract-status';
import { timelineContract } from './hot-state.contract-timeline';

// The observable semantics of HotState (core/ports/hot-state.ts), one suite per role, run
// against every adapter that implements them all: memory (hot-state.memory.test.ts) and
// Redis (hot-state.redis.test.ts). An adapter of a few roles runs only their suites.

export const connectionContract = (name: string, make: MakeHotState<Pick<HotConnection, 'ping'>>): void =>
  roleContract('connection', name, make, (ctx) => {
    it('answers ping', async () => {
      await expect(ctx.h().state.ping()).resolves.toBeUndefined();
    });
  });

export const hotStateContract = (name: string, make: MakeHotState<HotState>): void => {
  idempotencyContract(name, make);
  statusContract(name, make);
  listingContract(name, make);
  outstandingContract(name, make);
  retriesContract(name, make);
  shardsContract(name, make);
  statsContract(name, make);
  timelineContract(name, make);
  deadLettersContract(name, make);
  rebuildContract(name, make);
  orphansContract(name, make);
  connectionContract(name, make);
};
