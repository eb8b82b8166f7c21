import type { Config } from '../../core/config/schema';
import { replicationProblem, resolveReplication, topicSpecs } from '../../core/pipeline/topics';
import type { Check } from './doctor-check';
import type { TopicHealth } from '../kafka/topic-admin';

// The replication checks of `howk doctor`: what the config asks of the cluster, and whether
// every partition of the Howk topics has its replicas in sync right now.

/** How many partitions a detail line names before it says "and N more". */
const SHOWN = 5;

export const replicationCheck = (config: Config, known: number[], live: number[]): Check => {
  const spec = resolveReplication(topicSpecs(config)[0]!, known.length);
  const asked = `kafka.replication_factor=${config.kafka.replication_factor}, kafka.min_insync_replicas=${config.kafka.min_insync_replicas}`;
  const problem = replicationProblem(spec, known.length);
  const data = { replication_factor: spec.replicationFactor, min_insync_replicas: spec.minInsyncReplicas, brokers_known: known, brokers_answering: live };
  if (problem)
    return {
      check: 'kafka replication',
      status: 'fail',
      detail: `${asked}: ${problem}`,
      fix: 'lower kafka.replication_factor / kafka.min_insync_replicas, or add brokers',
      data,
    };
  const down = known.filter((b) => !live.includes(b));
  const detail = `topics get ${spec.replicationFactor} replica(s) and min.insync.replicas ${spec.minInsyncReplicas} (${asked}; ${known.length} broker(s) known)`;
  if (down.length)
    return {
      check: 'kafka replication',
      status: 'warn',
      detail: `${detail}; broker(s) ${down.join(', ')} hold replicas but do not answer`,
      fix: 'restart the missing broker(s); their partitions are served by the other replicas meanwhile',
      data,
    };
  return { check: 'kafka replication', status: 'ok', detail, data };
};

type Lagging = { topic: string; partition: number; leader: number; replicas: number[]; isr: number[] };

const name = (p: Lagging) => `${p.topic}[${p.partition}] in sync ${p.isr.join(',') || '-'} of ${p.replicas.join(',')}`;
const list = (ps: Lagging[]) => ps.slice(0, SHOWN).map(name).join('; ') + (ps.length > SHOWN ? `; and ${ps.length - SHOWN} more` : '');

/**
 * Under-replicated partitions (fewer replicas in sync than assigned): a warning, one more loss
 * may stop writes. Fewer in sync than min.insync.replicas, or no leader: a failure, acks=all
 * writes to them are refused now.
 */
export const inSyncCheck = (actual: ReadonlyMap<string, TopicHealth>): Check => {
  const all: Lagging[] = [];
  const refused: Lagging[] = [];
  let total = 0;
  for (const t of actual.values()) {
    for (const p of t.partitionStates) {
      total++;
      const row = { topic: t.name, ...p };
      if (p.isr.length < p.replicas.length) all.push(row);
      if (p.leader < 0 || p.isr.length < (t.minInsyncReplicas ?? 1)) refused.push(row);
    }
  }
  const out = [...new Set(all.flatMap((p) => p.replicas.filter((r) => !p.isr.includes(r))))].sort((a, b) => a - b);
  const data = { partitions: total, under_replicated: all.length, below_min_isr: refused.length, out_of_sync_brokers: out, rows: all };
  if (refused.length)
    return {
      check: 'kafka in-sync replicas',
      status: 'fail',
      detail: `${refused.length} partition(s) below min.insync.replicas or without a leader, writes to them are refused: ${list(refused)}`,
      fix: `bring broker(s) ${out.join(', ')} back; until then enqueues to these partitions answer 503`,
      data,
    };
  if (all.length)
    return {
      check: 'kafka in-sync replicas',
      status: 'warn',
      detail: `${all.length} of ${total} partition(s) under-replicated (broker(s) ${out.join(', ')} out of sync): ${list(all)}`,
      fix: 'bring the out-of-sync broker(s) back or let them catch up; one more loss may stop writes',
      data,
    };
  return { check: 'kafka in-sync replicas', status: 'ok', detail: `all ${total} partition(s) of the Howk topics have every replica in sync`, data };
};
