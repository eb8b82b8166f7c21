import type { Config } from '../../core/config/schema';
import type { Log, PartitionLag } from '../../core/ports/log';
import type { Lane } from '../../core/domain/webhook';

// The lag of the two delivery lanes' consumer groups, read through the log's admin: the
// metrics (workers/node/metric-probes.ts) and the console's gauges (workers/node/gauges.ts)
// ask the same question the same way.

export type LaneGroup = { group: string; topic: string };

export const laneGroups = (kafka: Config['kafka']): Record<Lane, LaneGroup> => ({
  fast: { group: kafka.consumer_group, topic: kafka.topics.pending },
  slow: { group: `${kafka.consumer_group}-slow`, topic: kafka.topics.slow },
});

/** The lag per partition of a lane's group; undefined when the log cannot tell (no lag in its admin). */
export const laneLagReader = (kafka: Config['kafka'], logStore: Log): ((lane: Lane) => Promise<PartitionLag[]>) | undefined => {
  const lag = logStore.admin.lag?.bind(logStore.admin);
  if (!lag) return undefined;
  const groups = laneGroups(kafka);
  return (lane) => lag(groups[lane].group, [groups[lane].topic]);
};

export const totalLag = (ps: PartitionLag[]): number => ps.reduce((n, p) => n + p.lag, 0);

/** What `read` answers within `ms`, or null when it fails or takes longer (never a guess). */
export const within = async <T>(read: () => Promise<T>, ms: number): Promise<T | null> => {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([read(), new Promise<null>((r) => (timer = setTimeout(() => r(null), ms)))]);
  } catch {
    return null;
  } finally {
    clearTimeout(timer);
  }
};
