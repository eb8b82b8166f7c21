import type { Batch, Consumer, IHeaders } from 'kafkajs';
import type { ConsumedRecord } from '../../core/ports/log';
import { settleWithin } from '../../core/domain/deadline';
import { errorMessage } from '../../core/errors/errors';
import { DEFAULT_MAX_HOLD_MS, type BatchTracker } from '../../core/log/batch-tracker';
import type { Logger } from '../../core/ports/logger';

/** Longest a member about to rejoin waits for its batches in flight (the whole group waits for it meanwhile). */
export const REVOKE_WAIT_MS = 1000;

/**
 * How long a new member waits before its first fetch of the partitions it was given: their
 * old owner, if alive, may have learnt of the rebalance from an idle fetch and rejoined with
 * deliveries still running. Those on the wire hold a lease (a copy waits for it), those
 * answered since are found by the copy's look-up once admitted, and those not started are cut
 * at its join (core/pipeline/elsewhere.ts, attempt.ts). A dead owner's partitions (kill -9)
 * wait for it too, which is why it is short: 1 s brought them back about 1 s later.
 */
export const JOIN_WAIT_MS = 250;

/** Waits (REVOKE_WAIT_MS at most each) for the batches in flight to resolve, then for their commit. */
export const finishInFlight = async (tracker: BatchTracker, flush: () => Promise<void>, log: Logger): Promise<void> => {
  const t = Date.now();
  await settleWithin(tracker.idle(), REVOKE_WAIT_MS, () => new Error('in flight')).catch(() => {});
  await settleWithin(flush(), REVOKE_WAIT_MS, () => new Error('commit')).catch(() => {});
  log.info('batches in flight finished before rejoining the group', { waited_ms: Date.now() - t, busy: tracker.busy() });
};

/**
 * The consumer group's membership as log lines: when this member learnt of a rebalance, how
 * long its join took and what it got, when it left. They are what a timeline of a worker's
 * death or restart is made of (test/chaos/trace.ts reads them): info, since a rebalance pauses
 * every member of the group. Heartbeats and commits are debug (one every few hundred ms).
 */
export const logGroupEvents = (c: Consumer, log: Logger, groupId: string): void => {
  const { GROUP_JOIN, REBALANCING, HEARTBEAT, COMMIT_OFFSETS, STOP } = c.events;
  c.on(REBALANCING, (e) => log.info('consumer group rebalancing', { group: groupId, member: e.payload.memberId }));
  c.on(GROUP_JOIN, (e) => {
    const { duration, isLeader, memberId, memberAssignment, groupProtocol } = e.payload;
    const partitions = Object.values(memberAssignment).reduce((n, ps) => n + ps.length, 0);
    log.info('joined consumer group', { group: groupId, member: memberId, duration_ms: duration, leader: isLeader, protocol: groupProtocol, partitions });
  });
  c.on(STOP, () => log.info('left consumer group', { group: groupId }));
  c.on(HEARTBEAT, (e) => log.debug('consumer group heartbeat', { group: groupId, member: e.payload.memberId }));
  c.on(COMMIT_OFFSETS, (e) => log.debug('offsets committed', { group: groupId, topics: e.payload.topics.length }));
};

/** Record headers as strings; nothing for a record without any (most of them). */
export const headersOf = (h: IHeaders | undefined): { headers?: Record<string, string> } => {
  let out: Record<string, string> | undefined;
  for (const k in h) {
    const v = h[k];
    if (v !== undefined) (out ??= {})[k] = Array.isArray(v) ? String(v[0]) : String(v);
  }
  return out ? { headers: out } : {};
};

/** How long a stopping consumer waits for kafkajs to leave its group. */
export const CONSUMER_STOP_WAIT_MS = 3000;
/** How long a stopping consumer waits for its last commit. */
export const COMMIT_STOP_WAIT_MS = 2000;
/** A commit that failed is sent again this soon, with what resolved since. */
export const COMMIT_RETRY_MS = 500;
/** A rejected batch's partition rests this long before it is fetched again. */
export const REWIND_PAUSE_MS = 200;

/** Heartbeat while eachBatch waits for room (the runner does not heartbeat meanwhile). */
export const WAIT_HEARTBEAT_MS = 1000;

export const keyOf = (topic: string, partition: number) => `${topic}\u0000${partition}`;
export const isRebalancing = (e: unknown) =>
  /REBALANCE_IN_PROGRESS|ILLEGAL_GENERATION|NOT_COORDINATOR|UNKNOWN_MEMBER_ID|rebalanc/i.test(`${(e as { type?: string }).type ?? ''} ${errorMessage(e)}`);

/** A fetched batch's high-water mark, if kafkajs gave one that parses (the tracker's doubt window, core/log/batch-tracker.ts). */
export const highOf = (hw: string | undefined): bigint | undefined => (hw && /^\d+$/.test(hw) ? BigInt(hw) : undefined);

/** Reads the log-end offset of each partition of a topic (the admin's listOffsets). */
export type ReadEnds = (topic: string) => Promise<{ partition: number; high: string }[]>;

/**
 * Tells the tracker where each partition of a new assignment ended when it was assigned: the
 * records from there on were never its last owner's, so they need no ended-status lookup
 * (core/log/batch-tracker.ts, `bound`). Best effort: without an answer the tracker keeps its
 * own, wider window. `current` is false once another assignment (or a crash) came since.
 */
export const boundDoubt = async (read: ReadEnds, assignment: Record<string, number[]>, tracker: BatchTracker, current: () => boolean, log: Logger): Promise<void> => {
  for (const [topic, ps] of Object.entries(assignment)) {
    if (!ps.length) continue;
    try {
      const ends = await settleWithin(read(topic), CONSUMER_STOP_WAIT_MS, () => new Error('listOffsets'));
      if (!current()) return;
      for (const { partition, high } of ends) if (ps.includes(partition)) tracker.bound(topic, partition, BigInt(high));
    } catch (e) {
      log.debug('log-end offsets not read at assignment; first records looked up as consumed before', { topic, error: errorMessage(e) });
    }
  }
};

/**
 * Holds the fetcher until fewer than `most` batches are busy, for at most maxHoldMs: a
 * batch whose deliveries cannot finish (a handoff writing its lease snapshot while the broker
 * is away) must not keep eachBatch running, or kafkajs cannot rejoin its group after an
 * outage until the rebalance times out (30 s, seen in the chaos Kafka-outage scenario).
 */
export const holdFetch = async (tracker: BatchTracker, most: number, maxHoldMs = DEFAULT_MAX_HOLD_MS): Promise<void> => {
  if (tracker.busy() < most) return;
  await Promise.race([tracker.fewerBusyThan(most), new Promise((r) => setTimeout(r, maxHoldMs))]);
};

/** A fetched batch's messages as the log records handlers get. */
export const recordsOf = ({ topic, partition, messages }: Batch): ConsumedRecord[] =>
  messages.map((m) => ({
    topic,
    partition,
    offset: m.offset,
    key: m.key ? m.key.toString('utf8') : null,
    value: m.value ? m.value.toString('utf8') : null,
    timestamp: Number(m.timestamp),
    ...headersOf(m.headers),
  }));
