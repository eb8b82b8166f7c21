import type { Config } from '../../core/config/schema';
import { keys } from '../../core/domain/keys';
import { topicPlan, wantedConfigs, type TopicState } from '../../core/pipeline/topic-plan';
import { topicSpecs } from '../../core/pipeline/topics';
import { redisUrlOf } from '../node/config';
import { createRedis } from '../redis/client';
import { groupLag } from '../kafka/group-lag';
import { connectAdmin, describeTopics, knownBrokers, type KafkaAdmin } from '../kafka/topic-admin';
import { inSyncCheck, replicationCheck } from './doctor-replication';
import { sessionCheck } from './doctor-session';
import { resolveReplication } from '../../core/pipeline/topics';
import type { Check } from './doctor-check';

// The checks of `howk doctor`: each says ok, warn or fail, why, and what to do about it.

export type { Check };

const msg = (e: unknown) => (e instanceof Error ? e.message : String(e));
const safeUrl = (u: string) => u.replace(/\/\/[^@/]*@/, '//***@');

/** Clock skew above these (ms) is a warning / a failure: retries, leases and TTLs compare clocks. */
export const SKEW_WARN_MS = 500;
export const SKEW_FAIL_MS = 5000;

const topicChecks = (config: Config, actual: Map<string, TopicState>, brokers: number): Check[] => {
  const specs = topicSpecs(config).map((s) => resolveReplication(s, brokers));
  const plan = topicPlan(specs, actual);
  return specs.map((s) => {
    const a = actual.get(s.name);
    const want = `${s.partitions} partition(s), ${Object.entries(wantedConfigs(s))
      .map(([k, v]) => `${k}=${v}`)
      .join(', ')}`;
    const check = `topic ${s.name}`;
    if (!a) return { check, status: 'warn', detail: `missing (the config asks ${want})`, fix: 'start the fleet (the binaries create their topics) or run `howk topics migrate`' };
    const steps = plan.steps.filter((x) => x.topic === s.name);
    const warns = plan.warnings.filter((x) => x.topic === s.name).map((w) => w.message);
    const data = {
      partitions: a.partitions,
      replicas: a.replicationFactor,
      'cleanup.policy': a.cleanupPolicy,
      'retention.ms': a.retentionMs,
      'min.insync.replicas': a.minInsyncReplicas,
    };
    if (!steps.length) return { check, status: warns.length ? 'warn' : 'ok', detail: warns.length ? warns.join('; ') : want, data };
    const bad = steps.map((x) =>
      x.kind === 'partitions' || x.kind === 'replicas'
        ? `${x.from} ${x.kind === 'partitions' ? 'partition' : 'replica'}(s), the config asks ${x.to}`
        : x.kind === 'config'
          ? `${x.name}=${x.from ?? '(unset)'}, the config asks ${x.to}`
          : '',
    );
    // Fewer partitions cap the parallelism; a wrong cleanup.policy loses compacted state or grows
    // forever; fewer replicas or a lower min.insync.replicas lose acknowledged writes with a broker.
    const fails = steps.some((x) => x.kind === 'partitions' || x.kind === 'replicas' || (x.kind === 'config' && x.name !== 'retention.ms'));
    return {
      check,
      status: fails ? 'fail' : 'warn',
      detail: [...bad, ...warns].join('; '),
      fix: '`howk topics migrate --dry-run` shows the changes, `howk topics migrate` makes them',
      data,
    };
  });
};

const lagCheck = async (admin: KafkaAdmin, config: Config, maxLag: number, existing: Map<string, TopicState>): Promise<Check> => {
  const group = config.kafka.consumer_group;
  const topics = [config.kafka.topics.pending, config.kafka.topics.slow].filter((t) => existing.has(t));
  if (!topics.length) return { check: 'consumer lag', status: 'warn', detail: 'the lane topics do not exist yet: nothing to measure' };
  const rows = await groupLag(admin, group, topics);
  const total = rows.reduce((a, r) => a + r.lag, 0);
  const worst = rows.reduce((a, r) => (r.lag > (a?.lag ?? -1) ? r : a), undefined as (typeof rows)[number] | undefined);
  const detail = `group ${group}: ${total} record(s) behind over ${rows.length} partition(s)${worst && worst.lag ? `, most on ${worst.topic}[${worst.partition}] (${worst.lag})` : ''}`;
  if (total > maxLag)
    return {
      check: 'consumer lag',
      status: 'warn',
      detail: `${detail}; above ${maxLag}`,
      fix: 'add howk-worker replicas (up to the partition count) or look for a slow endpoint holding a lane',
      data: rows,
    };
  return { check: 'consumer lag', status: 'ok', detail, data: rows };
};

export const kafkaChecks = async (config: Config, o: { maxLag: number }): Promise<Check[]> => {
  let admin: KafkaAdmin;
  try {
    admin = await connectAdmin(config);
  } catch (e) {
    return [
      {
        check: 'kafka',
        status: 'fail',
        detail: `Kafka unreachable at ${config.kafka.brokers.join(',')}: ${msg(e)}`,
        fix: 'check kafka.brokers (HOWK_KAFKA_BROKERS) and that the brokers run and listen there',
      },
    ];
  }
  try {
    const cluster = await admin.describeCluster();
    // kafkajs does not expose the broker software version; the cluster shape is what it can tell.
    const out: Check[] = [
      { check: 'kafka', status: 'ok', detail: `reachable: ${cluster.brokers.length} broker(s), controller ${cluster.controller}, cluster ${cluster.clusterId}`, data: cluster },
    ];
    const specs = topicSpecs(config);
    const actual = await describeTopics(
      admin,
      specs.map((s) => s.name),
    );
    const known = await knownBrokers(admin, actual);
    out.push(
      replicationCheck(
        config,
        known,
        cluster.brokers.map((b) => b.nodeId).sort((a, b) => a - b),
      ),
    );
    out.push(...topicChecks(config, actual, known.length));
    if (actual.size) out.push(inSyncCheck(actual));
    out.push(await sessionCheck(admin, config));
    out.push(await lagCheck(admin, config, o.maxLag, actual).catch((e): Check => ({ check: 'consumer lag', status: 'warn', detail: `could not read: ${msg(e)}` })));
    return out;
  } catch (e) {
    return [
      {
        check: 'kafka',
        status: 'fail',
        detail: `Kafka answered the connection but not the admin requests: ${msg(e)}`,
        fix: 'check the brokers’ logs and ACLs (the CLI needs Describe on topics and groups)',
      },
    ];
  } finally {
    await admin.disconnect().catch(() => {});
  }
};

export const redisChecks = async (config: Config, now: () => number = Date.now): Promise<Check[]> => {
  const url = redisUrlOf(config);
  const redis = createRedis(url, { clusterNodes: config.redis.cluster_nodes, maxRetriesPerRequest: 0, connectTimeoutMs: 2000, commandTimeoutMs: 2000, onError: () => {} });
  try {
    let info: string;
    try {
      info = String(await redis.info('server'));
    } catch (e) {
      return [
        {
          check: 'redis',
          status: 'fail',
          detail: `Redis unreachable at ${safeUrl(url)}: ${msg(e)}`,
          fix: 'check redis.url / redis.addr (HOWK_REDIS_URL) and that Redis runs and listens there',
        },
      ];
    }
    const version = /redis_version:(\S+)/.exec(info)?.[1] ?? 'unknown';
    const out: Check[] = [{ check: 'redis', status: 'ok', detail: `reachable at ${safeUrl(url)}, Redis ${version}`, data: { version } }];
    out.push(await skewCheck(redis, now));
    out.push(await canaryCheck(redis, config));
    return out;
  } finally {
    redis.disconnect();
  }
};

const skewCheck = async (redis: ReturnType<typeof createRedis>, now: () => number): Promise<Check> => {
  const before = now();
  const [s, us] = (await redis.time()) as [string | number, string | number];
  const after = now();
  const server = Number(s) * 1000 + Number(us) / 1000;
  // The server read its clock somewhere within the round trip: compare with its middle.
  const skew = Math.round(server - (before + after) / 2);
  const rtt = after - before;
  const detail = `local clock ${skew >= 0 ? 'behind' : 'ahead of'} Redis by ${Math.abs(skew)} ms (round trip ${rtt} ms); Kafka's clock is not measured (the protocol has no time query)`;
  const status = Math.abs(skew) > SKEW_FAIL_MS ? 'fail' : Math.abs(skew) > SKEW_WARN_MS ? 'warn' : 'ok';
  return {
    check: 'clock skew',
    status,
    detail,
    data: { skew_ms: skew, rtt_ms: rtt },
    ...(status === 'ok' ? {} : { fix: 'run NTP (chrony, systemd-timesyncd) on every howk host and the Redis host' }),
  };
};

const canaryCheck = async (redis: ReturnType<typeof createRedis>, config: Config): Promise<Check> => {
  const [canary, lock] = await Promise.all([redis.exists(keys.canary()), redis.get(keys.reconcilerLock())]);
  if (canary) return { check: 'canary', status: 'ok', detail: `${keys.canary()} present: Redis holds the state rebuilt from Kafka${lock ? ' (a rebuild lock is held too)' : ''}` };
  if (!config.reconciler.enabled)
    return { check: 'canary', status: 'warn', detail: `${keys.canary()} absent and reconciler.enabled is false: nothing rebuilds Redis after a loss` };
  if (lock)
    return {
      check: 'canary',
      status: 'warn',
      detail: `${keys.canary()} absent; a rebuild is under way (lock held by ${lock})`,
      fix: 'wait for it; workers resume when the canary is back',
    };
  return {
    check: 'canary',
    status: 'fail',
    detail: `${keys.canary()} absent: Redis lost its state (or the fleet never started) and no rebuild runs; workers hold their consumers until it is back`,
    fix: 'start a howk-worker or howk-scheduler, or run `npm run reconciler` (howk-reconciler), to rebuild Redis from Kafka',
  };
};
