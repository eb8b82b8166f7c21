import { Command, type Cluster, type Redis } from 'ioredis';
import type { ScriptedClient, ScriptedPipeline } from './scripts';

// What a Redis Cluster asks of a client beyond its commands: an ioredis pipeline there must
// stay within one slot group, and SCAN walks one node. A single Redis is left as it was: its
// pipelines go out as they are built.

/** The hash slot of a key (its hash tag's when it has one), as ioredis routes it. */
export const slotOf = (key: string): number => new Command('exists', [key]).getSlot() ?? 0;

/** `items` by the hash slot of their key, in first-seen order (one call per slot on a cluster). */
export const groupBySlot = <T>(items: readonly T[], keyOf: (t: T) => string): T[][] => {
  const bySlot = new Map<number, T[]>();
  for (const x of items) {
    const slot = slotOf(keyOf(x));
    const g = bySlot.get(slot);
    if (g) g.push(x);
    else bySlot.set(slot, [x]);
  }
  return [...bySlot.values()];
};

/** The hash slots the keys of these commands (name first, then its arguments) fall in. */
export const slotsOfCommands = (cmds: readonly (readonly [string, ...(string | number)[]])[]): Set<number> =>
  new Set(cmds.flatMap(([name, ...args]) => new Command(name, args).getKeys().map((k) => slotOf(String(k)))));

type Queued = { method: string | symbol; args: unknown[] } | { command: Command };

/** The first key of a queued command (its slot routes it), or undefined for a keyless one. */
const keyOf = (q: Queued): string | undefined => {
  if ('command' in q) return q.command.getKeys()[0]?.toString();
  // call('get', key, …): the command's own key positions say which argument is the key.
  if (q.method === 'call' || q.method === 'callBuffer') return new Command(String(q.args[0]), q.args.slice(1) as string[]).getKeys()[0]?.toString();
  const first = q.args[0];
  if (Array.isArray(first)) return first[0] === undefined ? undefined : String(first[0]);
  return typeof first === 'string' || typeof first === 'number' ? String(first) : undefined;
};

/**
 * On a cluster: a stand-in for a pipeline that records the commands, then sends one ioredis
 * pipeline per slot (all at once: they share the connection to a node, so they leave together)
 * and hands back their replies in the order the commands were queued, as exec does. Each
 * command's keys must share a slot (keys.ts: clusterKeys); the commands of different slots are
 * not atomic together, as a pipeline never was.
 */
const slotPipeline = (redis: ScriptedClient): ScriptedPipeline => {
  const queue: Queued[] = [];
  const exec = async (): Promise<[Error | null, unknown][]> => {
    const groups = new Map<number, number[]>();
    queue.forEach((q, i) => {
      const k = keyOf(q);
      const slot = k === undefined ? -1 : slotOf(k);
      const g = groups.get(slot);
      if (g) g.push(i);
      else groups.set(slot, [i]);
    });
    const out: [Error | null, unknown][] = new Array(queue.length);
    await Promise.all(
      [...groups.values()].map(async (idx) => {
        const p = redis.pipeline() as unknown as Record<string | symbol, (...a: unknown[]) => unknown> & ScriptedPipeline;
        for (const i of idx) {
          const q = queue[i]!;
          if ('command' in q) (p as unknown as { sendCommand(c: Command): unknown }).sendCommand(q.command);
          else p[q.method]!(...q.args);
        }
        const replies = (await p.exec()) ?? idx.map(() => [new Error('pipeline discarded'), null] as [Error, null]);
        idx.forEach((i, j) => (out[i] = replies[j]!));
      }),
    );
    return out;
  };
  const proxy: ScriptedPipeline = new Proxy({} as ScriptedPipeline, {
    get: (_, prop) => {
      if (prop === 'exec') return exec;
      if (prop === 'length') return queue.length;
      if (prop === 'then') return undefined;
      if (prop === 'sendCommand')
        return (command: Command) => {
          queue.push({ command });
          return proxy;
        };
      return (...args: unknown[]) => {
        queue.push({ method: prop, args });
        return proxy;
      };
    },
  });
  return proxy;
};

/** A pipeline: as built on a single Redis; split by slot on a cluster. */
export const pipe = (redis: ScriptedClient): ScriptedPipeline => (redis.isCluster ? slotPipeline(redis) : (redis.pipeline() as ScriptedPipeline));

/** The clients SCAN must walk: every master of a cluster, or the one Redis. */
export const scanTargets = (redis: Redis): Redis[] => (redis.isCluster ? (redis as unknown as Cluster).nodes('master') : [redis]);
