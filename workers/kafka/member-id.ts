import { createRequire } from 'node:module';

// A kafkajs 2.2.4 consumer that cannot reach its broker for about a second crashes (its
// fetch gives up after the client's retries) and restarts itself with a new ConsumerGroup,
// which joins as a *new* member. The group still lists the old member: the broker keeps it
// until its session timeout, or reloads it from its log after a restart, and a rebalance
// waits for every listed member up to the rebalance timeout. After a broker outage every
// consumer of the fleet had restarted, so the first JoinGroup answer came a whole
// kafka.rebalance_timeout (10 s) after the broker was back, and nothing was delivered meanwhile
// (docs/RELIABILITY.md, "Kafka down: the first delivery after the broker's return").
//
// So a consumer that restarts rejoins under the member id it had, unless it left the group
// (a stop that reached the broker): a known member rejoining lets the rebalance complete as
// soon as the members that are alive have joined. An id the broker no longer knows is answered
// UNKNOWN_MEMBER_ID, on which kafkajs clears it and joins as a new member, as before.
//
// The rejoin of the group's leader starts a rebalance (the broker's rule), which the members
// that rejoined before it learn of at their next heartbeat: kafkajs heartbeats every
// session_timeout / 10 (3 s), and meanwhile the leader's partitions wait (a first delivery 3.9 s
// after the broker was back in a chaos run). So for one rebalance timeout after rejoining under
// its old id, a consumer heartbeats at most QUICK_BEAT_MS apart (once per fetch when idle).

type GroupProto = {
  joinAndSync: (this: Group) => Promise<void>;
  leave: (this: Group) => Promise<void>;
  heartbeat: (this: Group, o: { interval: number }) => Promise<void>;
  __howkMemberId?: true;
};
/**
 * What the fix reads of a kafkajs ConsumerGroup: its member id, rebalance timeout and its
 * consumer's event emitter (one per consumer, kept across restarts); and what it adds.
 */
type Group = { memberId: string | null; rebalanceTimeout?: number; instrumentationEmitter?: object; __howkQuickBeatsUntil?: number };

/** Longest time between heartbeats right after a rejoin under a kept member id. */
export const QUICK_BEAT_MS = 500;

const require = createRequire(import.meta.url);

/** Member id per kafkajs consumer, while it has not left its group. */
const kept = new WeakMap<object, string>();

const remember = (g: Group) => {
  const key = g.instrumentationEmitter;
  if (!key) return;
  if (g.memberId) kept.set(key, g.memberId);
  else kept.delete(key);
};

/** Installs the fix once per process; false when kafkajs no longer has the shape it fixes. */
export const keepMemberIdAcrossRestarts = (): boolean => {
  let proto: GroupProto;
  try {
    proto = (require('kafkajs/src/consumer/consumerGroup.js') as { prototype: GroupProto }).prototype;
  } catch {
    return false;
  }
  if (proto.__howkMemberId) return true;
  const { joinAndSync, leave, heartbeat } = proto;
  if (typeof joinAndSync !== 'function' || typeof leave !== 'function' || typeof heartbeat !== 'function') return false;
  proto.joinAndSync = async function (this: Group) {
    const key = this.instrumentationEmitter;
    const restored = !this.memberId && key ? kept.get(key) : undefined;
    if (restored) this.memberId = restored;
    try {
      await joinAndSync.call(this);
      if (restored) this.__howkQuickBeatsUntil = Date.now() + (this.rebalanceTimeout ?? 10_000);
    } finally {
      remember(this);
    }
  };
  proto.heartbeat = function (this: Group, { interval }: { interval: number }) {
    const quick = (this.__howkQuickBeatsUntil ?? 0) > Date.now();
    return heartbeat.call(this, { interval: quick ? Math.min(interval, QUICK_BEAT_MS) : interval });
  };
  proto.leave = async function (this: Group) {
    await leave.call(this);
    remember(this);
  };
  proto.__howkMemberId = true;
  return true;
};

keepMemberIdAcrossRestarts();
