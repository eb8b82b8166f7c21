import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../core/config/load';
import { commandOf, dependsOn, envOf, portsOf, readCompose, type ComposeService } from '../helpers/container-files';

// No Docker engine runs here: docker-compose.scaled.yml is read as Compose would lay it over
// docker-compose.yml (`-f docker-compose.yml -f docker-compose.scaled.yml`): environment and
// depends_on merged key by key, everything else from the overlay where it says so.

const base = readCompose();
const overlay = readCompose('docker-compose.scaled.yml');
const names = [...new Set([...Object.keys(base.services), ...Object.keys(overlay.services)])];
const merged: Record<string, ComposeService> = Object.fromEntries(
  names.map((n) => {
    const b = base.services[n] ?? {};
    const o = overlay.services[n] ?? {};
    const depends = { ...dependsOn(b), ...dependsOn(o) };
    return [n, { ...b, ...o, environment: { ...envOf(b), ...envOf(o) }, depends_on: Object.fromEntries(Object.entries(depends).map(([k, c]) => [k, { condition: c }])) }];
  }),
);
const howkRoles = ['api', 'worker', 'scheduler', 'reconciler', 'bridge'];
const howk = Object.entries(merged).filter(([, s]) => howkRoles.some((r) => commandOf(s)?.[1] === `bin/howk-${r}.mjs`));
const brokers = Object.entries(merged).filter(([, s]) => s.image?.startsWith('apache/kafka'));
const redisNodes = Object.entries(merged).filter(([, s]) => s.image?.startsWith('redis') && commandOf(s)?.join(' ').includes('--cluster-enabled yes'));

describe('docker-compose.scaled.yml over docker-compose.yml', () => {
  it('runs three Kafka brokers in one KRaft quorum, topics replicated 3 with 2 in sync', () => {
    expect(brokers.map(([n]) => n).sort()).toEqual(['kafka', 'kafka-2', 'kafka-3']);
    const ids = brokers.map(([, s]) => envOf(s).KAFKA_NODE_ID).sort();
    expect(ids).toEqual(['1', '2', '3']);
    for (const [name, s] of brokers) {
      const env = envOf(s);
      expect(env.KAFKA_CONTROLLER_QUORUM_VOTERS, name).toBe('1@kafka:9093,2@kafka-2:9093,3@kafka-3:9093');
      expect(env.KAFKA_LISTENERS, `${name}: the controller listens on the network, not loopback`).toContain('CONTROLLER://0.0.0.0:9093');
      expect(env.KAFKA_ADVERTISED_LISTENERS, name).toContain(`DOCKER://${name}:29092`);
      expect(env.KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR, name).toBe('3');
      expect(JSON.stringify(s.healthcheck?.test), `${name} is healthy once its own listener answers`).toContain(`--bootstrap-server ${name}:29092`);
      for (const p of portsOf(s)) expect(p.host, `${name} publishes on loopback only`).toBe('127.0.0.1');
    }
  });

  it('runs a Redis Cluster of six nodes, created once with a replica per master', () => {
    expect(redisNodes.map(([n]) => n).sort()).toEqual(['redis-1', 'redis-2', 'redis-3', 'redis-4', 'redis-5', 'redis-6']);
    for (const [name, s] of redisNodes) {
      expect(commandOf(s)!.join(' '), name).toContain(`--cluster-announce-hostname ${name}`);
      expect(portsOf(s), `${name} is not published`).toEqual([]);
    }
    const init = merged['redis-cluster-init']!;
    const script = commandOf(init)!.join(' ');
    expect(script).toMatch(/--cluster create .*for n in 1 2 3 4 5 6.*--cluster-replicas 1 --cluster-yes/s);
    expect(script, 'a cluster already made is left alone').toMatch(/cluster_state:ok' && exit 0/);
    for (const [name] of redisNodes) expect(dependsOn(init)[name], name).toBe('service_healthy');
  });

  it('gives api, worker, scheduler, reconciler and bridge the three brokers, replication and the cluster nodes', () => {
    expect(howk.map(([n]) => n).sort()).toEqual(['howk-api', 'howk-bridge', 'howk-reconciler', 'howk-scheduler', 'howk-worker']);
    for (const [name, s] of howk) {
      const env = envOf(s);
      expect(env.HOWK_KAFKA_BROKERS?.split(','), name).toEqual(brokers.map(([n]) => `${n}:29092`));
      expect([env.HOWK_KAFKA_REPLICATION_FACTOR, env.HOWK_KAFKA_MIN_INSYNC_REPLICAS], name).toEqual(['3', '2']);
      expect(env.HOWK_REDIS_CLUSTER_NODES?.split(',').sort(), name).toEqual(redisNodes.map(([n]) => `${n}:6379`).sort());
      expect(dependsOn(s)['redis-cluster-init'], `${name} starts once the cluster is made`).toBe('service_completed_successfully');
      for (const b of ['kafka', 'kafka-2', 'kafka-3']) expect(dependsOn(s)[b], `${name} waits for ${b}`).toBe('service_healthy');
      // The rest of the base service's settings stay (ports, auth off for the local trial).
      expect(env.HOWK_LOG_LEVEL, name).toBe('info');
      const c = loadConfig({ env });
      expect([c.kafka.replication_factor, c.kafka.min_insync_replicas], name).toEqual([3, 2]);
      expect(c.redis.cluster_nodes, name).toEqual(env.HOWK_REDIS_CLUSTER_NODES!.split(','));
    }
  });
});
