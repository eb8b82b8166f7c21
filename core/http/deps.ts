import type { Config } from '../config/schema';
import type { Enqueuer } from '../pipeline/enqueue';
import type { Logger } from '../pipeline/logger';
import type { HotState } from '../ports/hot-state';

export type DependencyCheck = { name: string; check: () => Promise<void> };

/** What the HTTP layer needs. Capabilities added later (admin, scripts, keys) join as optional fields. */
export type ApiDeps = {
  config: Config;
  enqueue: Enqueuer;
  hot: HotState;
  log: Logger;
  dependencies: DependencyCheck[];
  clock: { now(): number };
};
