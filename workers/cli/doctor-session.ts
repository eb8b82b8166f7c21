import type { Config } from '../../core/config/schema';
import { brokerMinSessionTimeout } from '../kafka/session-timeout';
import type { KafkaAdmin } from '../kafka/topic-admin';
import type { Check } from './doctor-check';

/**
 * kafka.session_timeout against the brokers' group.min.session.timeout.ms: below it, workers
 * join with the brokers' minimum (Kafka's default 6 s), and a worker killed with -9 leaves its
 * partitions idle that long instead (docs/RELIABILITY.md, "Group membership").
 */
export const sessionCheck = async (admin: KafkaAdmin, config: Config): Promise<Check> => {
  const check = 'consumer session timeout';
  const wanted = config.kafka.session_timeout;
  let min: number | undefined;
  try {
    min = await brokerMinSessionTimeout(admin);
  } catch (e) {
    return {
      check,
      status: 'warn',
      detail: `group.min.session.timeout.ms not readable: ${e instanceof Error ? e.message : String(e)}`,
      fix: 'allow DescribeConfigs on the cluster to the CLI',
    };
  }
  if (min === undefined) return { check, status: 'warn', detail: 'the brokers did not report group.min.session.timeout.ms' };
  const data = { session_timeout_ms: wanted, broker_min_ms: min };
  if (wanted >= min) return { check, status: 'ok', detail: `kafka.session_timeout ${wanted} ms, at or above the brokers' minimum (${min} ms)`, data };
  return {
    check,
    status: 'warn',
    detail: `kafka.session_timeout is ${wanted} ms but the brokers' group.min.session.timeout.ms is ${min} ms: workers join with ${min} ms, so a worker that dies without leaving stalls its partitions for ${min} ms`,
    fix: `set group.min.session.timeout.ms=${Math.min(wanted, 1000)} on every broker (a rolling restart of the brokers), or raise kafka.session_timeout to ${min} ms to accept the longer stall`,
    data,
  };
};
