import type { Consumer } from 'kafkajs';
import type { Logger } from '../../core/ports/logger';
import { heartbeatIntervalFor } from './session-timeout';

/** How long a member that is unsure of its membership waits before its fetcher brings the batch again. */
export const UNSURE_WAIT_MS = 250;

/**
 * Whether this member can still be sure it owns its partitions. The group drops a member whose
 * heartbeats it has not had for the session timeout and hands its partitions to the others,
 * who read them from the last commit. A member whose heartbeats fail with anything but "the
 * group rebalances" (its coordinator died or moved: connection refused, not the coordinator)
 * learns that it was dropped only once a heartbeat reaches the new coordinator, and until then
 * its fetches, which go to the partitions' leaders, keep working. Taking batches meanwhile sent
 * what the new owner sent too: records the new owner reads past the offsets it looked up are
 * not checked for an earlier owner's deliveries (core/log/batch-tracker.ts, `afterAssignment`).
 * So past two thirds of the session without an answered heartbeat or a join, the member takes
 * no batch until the group answers again: a heartbeat (it owns them still) or a rebalance
 * (it rejoins). The third left is for the batches it took to finish and mark what they sent.
 * An offset commit that went through answers too: the coordinator takes a group member's commit
 * only from a member of the current generation. Commits find a moved coordinator seconds sooner
 * than the heartbeat (kafkajs shares one heartbeat request among its callers, and one stuck on
 * the dead broker holds the others), and a member's failed commits are retried every 500 ms.
 */
export const membershipFence = (c: Consumer, sessionMs: number, log: Logger, groupId: string, now: () => number = Date.now) => {
  const limitMs = Math.max((2 * sessionMs) / 3, 2 * heartbeatIntervalFor(sessionMs));
  let confirmedAt = now();
  let told = false;
  const confirmed = () => {
    confirmedAt = now();
    if (told) log.info('the consumer group answers again: taking batches', { group: groupId });
    told = false;
  };
  c.on(c.events.HEARTBEAT, confirmed);
  c.on(c.events.GROUP_JOIN, confirmed);
  c.on(c.events.COMMIT_OFFSETS, confirmed);
  return {
    /** True when no heartbeat was answered for too long to be sure the partitions are still this member's. */
    unsure(): boolean {
      const silent = now() - confirmedAt;
      if (silent <= limitMs) return false;
      if (!told)
        log.warn('heartbeats unanswered: taking no batch until the consumer group answers (its partitions may be with another member)', {
          group: groupId,
          silent_ms: silent,
          limit_ms: limitMs,
        });
      told = true;
      return true;
    },
    wait: (): Promise<void> => new Promise((r) => setTimeout(r, UNSURE_WAIT_MS)),
  };
};

export type MembershipFence = ReturnType<typeof membershipFence>;
