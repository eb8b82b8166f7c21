import kafkajs, { type Admin } from 'kafkajs';
import { settleWithin } from '../../core/domain/deadline';
import type { Logger } from '../../core/ports/logger';

// kafkajs is CommonJS: Node's ESM loader sees only the names it can detect, not this one.
const { ConfigResourceTypes } = kafkajs;

/**
 * Session timeouts: how soon the group notices a member that died without leaving (kill -9,
 * a lost host) and hands its partitions to the others. A broker refuses a join whose session
 * timeout is below its group.min.session.timeout.ms (Kafka's default: 6 s; Howk's broker
 * scripts set 1 s), and kafkajs then stops the consumer for good. So a worker reads that
 * minimum first and, when the configured timeout is below it, joins with the minimum.
 */

/** The brokers' group.min.session.timeout.ms, or undefined when it cannot be read (no DescribeConfigs right). */
export const brokerMinSessionTimeout = async (admin: Admin): Promise<number | undefined> => {
  const { brokers } = await admin.describeCluster();
  if (!brokers.length) return undefined;
  const res = await admin.describeConfigs({
    includeSynonyms: false,
    resources: brokers.map((b) => ({ type: ConfigResourceTypes.BROKER, name: String(b.nodeId), configNames: ['group.min.session.timeout.ms'] })),
  });
  const values = res.resources.flatMap((r) => r.configEntries.filter((e) => e.configName === 'group.min.session.timeout.ms').map((e) => Number(e.configValue)));
  const known = values.filter((v) => Number.isFinite(v));
  return known.length ? Math.max(...known) : undefined;
};

/**
 * How often a member heartbeats: also how soon a live member learns that the group
 * rebalances (a member joined or left) and rejoins, while the whole group waits for it.
 * Kafka asks for at most a third of the session; a sixth, within 250 ms - 1 s.
 */
export const heartbeatIntervalFor = (sessionTimeoutMs: number): number =>
  // kafkajs refuses an interval not below the session (a configured one below any broker's minimum, before it is raised).
  Math.max(1, Math.min(1000, Math.max(250, Math.floor(sessionTimeoutMs / 6)), Math.floor(sessionTimeoutMs / 3)));

/**
 * The session timeout to join with: the configured one, or the brokers' minimum when that is
 * higher (logged). The minimum is read once per KafkaLog; unreadable, the configured one is used.
 */
export const sessionFitter = (admin: () => Promise<Admin>) => {
  let min: Promise<number | undefined> | undefined;
  let told = false;
  return async (wanted: number, log: Logger): Promise<number> => {
    min ??= settleWithin(admin().then(brokerMinSessionTimeout), 10_000, () => new Error('timed out')).catch(() => undefined);
    const m = await min;
    if (m === undefined || m <= wanted) return wanted;
    if (!told) log.warn("session timeout below the brokers' group.min.session.timeout.ms: joining with their minimum", { configured_ms: wanted, broker_min_ms: m });
    told = true;
    return m;
  };
};
