import { describe } from 'vitest';
import { circuitCases } from './guards.contract-circuit';
import { copyCases } from './guards.contract-copies';
import { domainLimitCases } from './guards.contract-domain-limit';
import { endpointLimitCases } from './guards.contract-endpoint-limit';
import { pauseAdmissionCases } from './guards.contract-pause';
import { rateLimitCases } from './guards.contract-rate-limit';
import { endpointViewCases } from './guards.contract-view';
import type { GuardsCaps, MakeGuards } from './guards.fixtures';

// The observable semantics of Guards (core/ports/guards.ts), run against every adapter:
// memory (guards.memory.test.ts) and Redis (guards.redis.test.ts). Every request carries its
// own `now` and both adapters take time from it, so no test waits for real time to pass.
// One file per concern; the pause, restore, gauges and batch suites are registered beside this one.

// The harness and builders, for the files that run the contract on an adapter.
export * from './guards.fixtures';

export const guardsContract = (name: string, make: MakeGuards, caps: GuardsCaps = {}): void => {
  describe(`Guards contract: ${name}`, () => {
    circuitCases(make);
    endpointLimitCases(make, caps);
    if (caps.hostLimits !== false) domainLimitCases(make);
    rateLimitCases(make);
    pauseAdmissionCases(make);
    endpointViewCases(make);
    copyCases(make, caps);
  });
};
