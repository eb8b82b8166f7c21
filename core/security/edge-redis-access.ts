import { keys } from '../domain/keys';

// What the edge may do to the fleet's Redis through howk-bridge: each command with the keys
// it may touch, built from the one key builder. A leaked edge token then reads statuses,
// stats, capacity and the key table, uses the Lua kv store, adds parked webhooks to the
// retry schedule (never replacing one) and keeps /incoming replay marks; it cannot rewrite any
// other hot-state key.

/** A key pattern: an exact key, or a prefix followed by `*`. */
export type KeyPattern = string;

export type EdgeRedisGrant = {
  commands: readonly string[];
  /** Which arguments are keys: none, the first, or every one. */
  keys: 'none' | 'first' | 'all';
  patterns: readonly KeyPattern[];
  /**
   * An option the command must carry, e.g. NX (add, never replace): the word, and from which
   * argument on options stand (after SET's key and value; right after ZADD's key, `at`).
   */
  requires?: { word: string; from: number; at?: boolean };
};

const prefix = (p: string): KeyPattern => `${p}*`;

/** The keys the edge's capacity reads touch (DomainGate). */
export const CAPACITY_PATTERNS: readonly KeyPattern[] = [prefix(keys.domainLimit('')), prefix(keys.endpointLimit('')), prefix(keys.circuit(''))];

export const EDGE_REDIS_GRANTS: readonly EdgeRedisGrant[] = [
  { commands: ['ping', 'echo'], keys: 'none', patterns: [] },
  // Status reads (GET /webhooks/:id/status: the hash, history included) and the key table.
  { commands: ['hget', 'hmget', 'hgetall'], keys: 'first', patterns: [prefix(keys.status('')), keys.apiKeys(), ...CAPACITY_PATTERNS] },
  // The history list of workers not yet upgraded (core/domain/status-history.ts).
  { commands: ['lrange'], keys: 'first', patterns: [prefix(keys.statusHistory(''))] },
  { commands: ['zcard'], keys: 'first', patterns: [prefix(keys.endpointQueued(''))] },
  // GET /stats.
  { commands: ['mget'], keys: 'all', patterns: [prefix('stats:'), prefix('kv:')] },
  { commands: ['pfcount'], keys: 'all', patterns: [prefix(keys.endpointsHll(''))] },
  // The Lua kv module of transformers.
  { commands: ['get', 'set', 'exists', 'expire', 'pexpire', 'ttl', 'pttl', 'incr', 'incrby', 'decr'], keys: 'first', patterns: [prefix('kv:')] },
  { commands: ['del', 'exists'], keys: 'all', patterns: [prefix('kv:')] },
  // A webhook parked at the edge (open circuit) joins the retry schedule; NX: never replaces one.
  { commands: ['zadd'], keys: 'first', patterns: [keys.retries()], requires: { word: 'NX', from: 1, at: true } },
  { commands: ['set'], keys: 'first', patterns: [prefix(keys.retryData(''))], requires: { word: 'NX', from: 2 } },
  // Replay marks of signed /incoming requests: claimed with NX, answered with XX (never a new
  // key without NX), given back with DEL. A leaked token can at worst answer or hold a copy.
  { commands: ['set'], keys: 'first', patterns: [prefix(keys.inboundReplayPrefix())], requires: { word: 'NX', from: 2 } },
  { commands: ['set'], keys: 'first', patterns: [prefix(keys.inboundReplayPrefix())], requires: { word: 'XX', from: 2 } },
  { commands: ['del'], keys: 'all', patterns: [prefix(keys.inboundReplayPrefix())] },
];

export const EDGE_REDIS_COMMANDS: readonly string[] = [...new Set(EDGE_REDIS_GRANTS.flatMap((g) => g.commands))];

export const matchesKey = (pattern: KeyPattern, key: string): boolean => (pattern.endsWith('*') ? key.startsWith(pattern.slice(0, -1)) : key === pattern);

const hasOption = (args: readonly string[], r: NonNullable<EdgeRedisGrant['requires']>): boolean =>
  r.at ? args[r.from]?.toUpperCase() === r.word : args.slice(r.from).some((a) => a.toUpperCase() === r.word);

/**
 * Why the edge may not run this command, or null when a grant allows it. `args` are the
 * command's arguments after its name.
 */
export const edgeRedisRefusal = (name: string, args: readonly string[]): string | null => {
  const cmd = name.toLowerCase();
  const grants = EDGE_REDIS_GRANTS.filter((g) => g.commands.includes(cmd));
  if (!grants.length) return `command '${cmd}' is not open to the edge`;
  for (const g of grants) {
    const ks = g.keys === 'none' ? [] : g.keys === 'first' ? args.slice(0, 1) : args;
    if (g.keys !== 'none' && !ks.length) continue;
    if (!ks.every((k) => g.patterns.some((p) => matchesKey(p, k)))) continue;
    if (g.requires && !hasOption(args, g.requires)) continue;
    return null;
  }
  const first = args[0];
  return first === undefined ? `command '${cmd}' needs a key` : `command '${cmd}' on key '${first}' is not open to the edge`;
};
