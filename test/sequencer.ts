import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The integration files that take longest (15 s and more in a clean-clone CI run), longest first.
 * With several workers (HOWK_TEST_INTEGRATION_WORKERS) they start first, so that the project
 * does not end with one worker still in a long file while the others sit idle. A file missing
 * here only runs later; a file named here that no longer exists is ignored.
 */
export const SLOW_FIRST: readonly string[] = [
  'test/integration/cli.test.ts',
  'test/integration/security-fuzz.test.ts',
  'test/integration/adaptive-concurrency.test.ts',
  'test/integration/protection.test.ts',
  'test/integration/redis-stopped.test.ts',
  'test/integration/svix-endpoint-limits.test.ts',
  'test/integration/reconcile-pause-circuit.test.ts',
  'test/contract/log.kafka.test.ts',
  'test/integration/redis-outage.test.ts',
  'test/e2e/dev-restart.test.ts',
  'test/integration/redis-degraded.test.ts',
  'test/integration/hostile-headers.test.ts',
  'test/integration/sent-marks.test.ts',
  'test/integration/security-keys.test.ts',
  'test/integration/orphan-sweep.test.ts',
  'test/integration/scripts.test.ts',
];

/** vitest's order (cached durations, then size), with SLOW_FIRST's files ahead of the rest. */
export default class SlowFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (f: TestSpecification) => {
      const i = SLOW_FIRST.indexOf(relative(f.project.config.root, f.moduleId).split('\\').join('/'));
      return i < 0 ? SLOW_FIRST.length : i;
    };
    // Per project, in vitest's project order; Array.prototype.sort is stable, so the files not
    // named keep vitest's order.
    const byProject = new Map<string, TestSpecification[]>();
    for (const f of sorted) byProject.set(f.project.name, [...(byProject.get(f.project.name) ?? []), f]);
    return [...byProject.values()].flatMap((group) => group.sort((a, b) => rank(a) - rank(b)));
  }
}
