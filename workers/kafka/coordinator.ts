import { createRequire } from 'node:module';

// kafkajs 2.2.4 finds a group's coordinator once per join and keeps it: the offset manager
// commits to the coordinator it was built with (offsetManager.getCoordinator: a broker that
// is no longer connected is looked up again *by the same node id*), and the heartbeat goes to
// the coordinator found at the join. When that broker dies, the coordinator moves (another
// broker leads the group's __consumer_offsets partition within broker.session.timeout.ms) but
// the consumer goes on committing to the dead node ("Broker 1 not found in the cached
// metadata", ECONNREFUSED) until something makes it rejoin: 26 s in
// test/replicated/coordinator-failover.cluster.test.ts, during which nothing it consumed was
// committed. At the rejoin its partitions were read again from the last commit that got
// through: 376 records read twice there, and webhooks sent twice in the broker kill -9 fault
// test. A NOT_COORDINATOR answer (a live broker that no longer coordinates the group) left it
// on the same broker too.
//
// So after an error that says the coordinator is gone or elsewhere, the next commit or
// heartbeat asks the cluster which broker coordinates the group now (FindCoordinator, retried
// by kafkajs until one answers) and uses that. The new coordinator loaded the group, its
// members and generation from __consumer_offsets: the member goes on under its generation, no
// rebalance, and its commits resume as soon as the coordinator has moved.

type Broker = { isConnected(): boolean };
type Cluster = { findGroupCoordinator(o: { groupId: string }): Promise<Broker> };
type Coordinated = { groupId: string; cluster: Cluster; coordinator: Broker | null; __howkCoordinatorLost?: boolean };
type OffsetManagerProto = {
  getCoordinator: (this: Coordinated) => Promise<Broker>;
  commitOffsets: (this: Coordinated, offsets?: unknown) => Promise<void>;
  __howkCoordinator?: true;
};
type GroupProto = { heartbeat: (this: Coordinated, o: { interval: number }) => Promise<void>; __howkCoordinator?: true };

/** An error of a request to the coordinator that means it is down, unknown or no longer the group's. */
export const coordinatorLost = (e: unknown): boolean => {
  const { name, type, code, message } = (e ?? {}) as { name?: string; type?: string; code?: string; message?: string };
  return (
    type === 'NOT_COORDINATOR_FOR_GROUP' ||
    type === 'GROUP_COORDINATOR_NOT_AVAILABLE' ||
    code === 'ECONNREFUSED' ||
    name === 'KafkaJSConnectionError' ||
    name === 'KafkaJSConnectionClosedError' ||
    name === 'KafkaJSBrokerNotFound' ||
    name === 'KafkaJSRequestTimeoutError' ||
    /not found in the cached metadata|Not connected|Connection (error|closed)/i.test(message ?? '')
  );
};

/**
 * The coordinator to send to: found again when the last request to it said it was lost, or
 * (`disconnected`, the offset manager's own rule) when its connection is closed.
 */
const current = async (o: Coordinated, disconnected: boolean): Promise<Broker | null> => {
  if (o.coordinator && !o.__howkCoordinatorLost && !(disconnected && !o.coordinator.isConnected())) return o.coordinator;
  o.coordinator = await o.cluster.findGroupCoordinator({ groupId: o.groupId });
  o.__howkCoordinatorLost = false;
  return o.coordinator;
};

const require = createRequire(import.meta.url);

/** Installs the fix once per process; false when kafkajs no longer has the shape it fixes. */
export const followMovedCoordinator = (): boolean => {
  let om: OffsetManagerProto;
  let group: GroupProto;
  try {
    om = (require('kafkajs/src/consumer/offsetManager/index.js') as { prototype: OffsetManagerProto }).prototype;
    group = (require('kafkajs/src/consumer/consumerGroup.js') as { prototype: GroupProto }).prototype;
  } catch {
    return false;
  }
  if (om.__howkCoordinator && group.__howkCoordinator) return true;
  const { commitOffsets } = om;
  const { heartbeat } = group;
  if (typeof om.getCoordinator !== 'function' || typeof commitOffsets !== 'function' || typeof heartbeat !== 'function') return false;
  om.getCoordinator = async function (this: Coordinated) {
    return (await current(this, true))!;
  };
  om.commitOffsets = async function (this: Coordinated, offsets?: unknown) {
    try {
      await commitOffsets.call(this, offsets);
    } catch (e) {
      if (coordinatorLost(e)) this.__howkCoordinatorLost = true;
      throw e;
    }
  };
  group.heartbeat = async function (this: Coordinated, o: { interval: number }) {
    // Before the first join there is no coordinator yet (nor a member id: nothing is sent). A
    // closed connection is opened again by the request itself, as before.
    if (this.coordinator && this.__howkCoordinatorLost) await current(this, false);
    try {
      await heartbeat.call(this, o);
    } catch (e) {
      if (coordinatorLost(e)) this.__howkCoordinatorLost = true;
      throw e;
    }
  };
  om.__howkCoordinator = true;
  group.__howkCoordinator = true;
  return true;
};

followMovedCoordinator();
