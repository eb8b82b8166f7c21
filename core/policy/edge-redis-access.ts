import { clusterKeys, keys } from '../domain/keys';

// What the edge may do to the fleet's Redis through howk-bridge, as one table of grants:
// each names a command, the keys it may touch (built from the one key builder), the options
// it may carry and those it must carry. Every argument is accounted for by the command's
// syntax below (keys, values, options), so an option Redis would read but no grant names
// (SET … GET, ZADD … CH/GT/INCR, SET … KEEPTTL) refuses the command: a check that only looks
// for a required word would let anything else ride along. A leaked edge token then reads
// statuses, stats, capacity and its own key record, uses the Lua kv store, and adds parked
// webhooks to the retry schedule (never replacing one, never reading one back), and keeps
// the replay marks of signed /incoming requests (at worst it answers or holds a copy).
// The patterns cover both key layouts (core/domain/keys.ts): an edge in front of a Redis
// Cluster builds the hash-tagged names (`status:{<id>}`, `circuit:{<hash>}`, `retries:{retries}`),
// which the prefixes match as they match the single-Redis ones; exact keys name both.

/** A key pattern: an exact key, or a prefix followed by `*`. */
export type KeyPattern = string;

export type EdgeRedisGrant = {
  /** What the edge uses it for (shown in docs/EDGE.md). */
  use: string;
  commands: readonly string[];
  /** The patterns every key argument must match; empty for a command without keys. */
  keys: readonly KeyPattern[];
  /** The options the commands may carry (upper case); any other option is refused. */
  options: readonly string[];
  /** Options they must carry. */
  requires?: readonly string[];
};

const prefix = (p: string): KeyPattern => `${p}*`;
const kv = prefix('kv:');

/** The keys the edge's capacity reads touch (DomainGate). */
export const CAPACITY_PATTERNS: readonly KeyPattern[] = [prefix(keys.domainLimit('')), prefix(keys.endpointLimit('')), prefix(keys.circuit(''))];

/** Idempotency claims: `idempotency:{config}:<key>`, and the shape before the tag (only read). */
const IDEMPOTENCY = prefix(keys.legacyIdempotency('', '').slice(0, -1));

export const EDGE_REDIS_GRANTS: readonly EdgeRedisGrant[] = [
  { use: 'health', commands: ['ping', 'echo'], keys: [], options: [] },
  { use: 'status reads', commands: ['hget', 'hmget', 'hgetall'], keys: [prefix(keys.status(''))], options: [] },
  { use: 'status history of workers before it moved into `status:*`', commands: ['lrange'], keys: [prefix(keys.statusHistory(''))], options: [] },
  { use: 'the API key mirror, one key id at a time', commands: ['hget'], keys: [keys.apiKeys()], options: [] },
  { use: 'capacity', commands: ['hmget'], keys: CAPACITY_PATTERNS, options: [] },
  { use: 'capacity', commands: ['zcard'], keys: [prefix(keys.endpointQueued(''))], options: [] },
  { use: 'stats', commands: ['mget'], keys: [prefix('stats:')], options: [] },
  { use: 'stats', commands: ['pfcount'], keys: [prefix(keys.endpointsHll(''))], options: [] },
  { use: 'the Lua kv module', commands: ['get', 'mget', 'del', 'exists', 'ttl', 'pttl', 'incr', 'incrby', 'decr', 'expire', 'pexpire'], keys: [kv], options: [] },
  { use: 'the Lua kv module', commands: ['set'], keys: [kv], options: ['EX'] },
  // A webhook parked at the edge (open circuit) joins the retry schedule: added, never replaced.
  { use: 'parking (open circuit)', commands: ['set'], keys: [prefix(keys.retryData(''))], options: ['NX', 'PX'], requires: ['NX'] },
  { use: 'parking (open circuit)', commands: ['zadd'], keys: [keys.retries(), clusterKeys.retries()], options: ['NX'], requires: ['NX'] },
  // Replay marks of signed /incoming requests: claimed with NX (GET reads the first answer in
  // the same step), answered with XX and the claim's TTL kept, given back with DEL.
  { use: 'replay marks of /incoming', commands: ['set'], keys: [prefix(keys.inboundReplayPrefix())], options: ['NX', 'GET', 'PX'], requires: ['NX', 'PX'] },
  { use: 'replay marks of /incoming', commands: ['set'], keys: [prefix(keys.inboundReplayPrefix())], options: ['XX', 'KEEPTTL'], requires: ['XX'] },
  { use: 'replay marks of /incoming', commands: ['del'], keys: [prefix(keys.inboundReplayPrefix())], options: [] },
  // Idempotency claims, shared with howk-api: claimed with NX (GET answers the holder in the
  // same step) and a short TTL, made final with XX and the idempotency window once Kafka has
  // the webhook, read, and given back by the request that claimed them.
  { use: 'idempotency claims', commands: ['set'], keys: [IDEMPOTENCY], options: ['NX', 'GET', 'PX'], requires: ['NX', 'PX'] },
  { use: 'idempotency claims', commands: ['set'], keys: [IDEMPOTENCY], options: ['XX', 'PX'], requires: ['XX', 'PX'] },
  { use: 'idempotency claims', commands: ['get', 'del'], keys: [IDEMPOTENCY], options: [] },
];

/**
 * How Redis reads a granted command's arguments: `args` in order (`key`, a free `value`, an
 * `int`, a ZADD `score`), the last `repeat` of them repeated (at least once), `optional` of
 * the last ones left out; and the options Redis knows for it (word → arguments it takes),
 * read after the positional arguments (`end`) or, for ZADD, right after the key (`1`).
 */
type Part = 'key' | 'value' | 'int' | 'score';
type Syntax = { args: readonly Part[]; repeat?: number; optional?: number; options?: { words: Readonly<Record<string, number>>; at: 'end' | 1 } };

const EXPIRY_OPTIONS = { NX: 0, XX: 0, GT: 0, LT: 0 };
const SYNTAX: Readonly<Record<string, Syntax>> = {
  ping: { args: ['value'], optional: 1 },
  echo: { args: ['value'] },
  get: { args: ['key'] },
  hget: { args: ['key', 'value'] },
  hmget: { args: ['key', 'value'], repeat: 1 },
  hgetall: { args: ['key'] },
  lrange: { args: ['key', 'int', 'int'] },
  zcard: { args: ['key'] },
  mget: { args: ['key'], repeat: 1 },
  pfcount: { args: ['key'], repeat: 1 },
  del: { args: ['key'], repeat: 1 },
  exists: { args: ['key'], repeat: 1 },
  ttl: { args: ['key'] },
  pttl: { args: ['key'] },
  incr: { args: ['key'] },
  decr: { args: ['key'] },
  incrby: { args: ['key', 'int'] },
  expire: { args: ['key', 'int'], options: { words: EXPIRY_OPTIONS, at: 'end' } },
  pexpire: { args: ['key', 'int'], options: { words: EXPIRY_OPTIONS, at: 'end' } },
  set: { args: ['key', 'value'], options: { words: { NX: 0, XX: 0, GET: 0, KEEPTTL: 0, EX: 1, PX: 1, EXAT: 1, PXAT: 1, IFEQ: 1, IFNE: 1 }, at: 'end' } },
  zadd: { args: ['key', 'score', 'value'], repeat: 2, options: { words: { NX: 0, XX: 0, GT: 0, LT: 0, CH: 0, INCR: 0 }, at: 1 } },
};

export const EDGE_REDIS_COMMANDS: readonly string[] = [...new Set(EDGE_REDIS_GRANTS.flatMap((g) => g.commands))];

export const matchesKey = (pattern: KeyPattern, key: string): boolean => (pattern.endsWith('*') ? key.startsWith(pattern.slice(0, -1)) : key === pattern);

const INT = /^-?\d{1,19}$/;
// What Redis takes as a score; anything else (an option word Redis knows and this table
// does not) is refused rather than passed on.
const SCORE = /^[+-]?((\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?|inf)$/i;

type Parsed = { keys: string[]; options: string[] };

/** The command's keys and options, or why its arguments are not what its syntax allows. */
const parse = (cmd: string, s: Syntax, args: readonly string[]): Parsed | string => {
  const out: Parsed = { keys: [], options: [] };
  const words = s.options?.words ?? {};
  let i = 0;
  const takeOptions = (): string | null => {
    while (i < args.length) {
      const word = args[i]!.toUpperCase();
      const arity = words[word];
      if (arity === undefined) return s.options?.at === 'end' ? `option '${args[i]}' of command '${cmd}' is unknown to howk-bridge` : null;
      // An option's own arguments are Redis's to check (SET … PX GET: GET is PX's bad value there too).
      if (i + arity >= args.length) return `option '${word}' of command '${cmd}' needs ${arity} argument(s)`;
      out.options.push(word);
      i += 1 + arity;
    }
    return null;
  };
  const head = s.args.length - (s.repeat ?? 0);
  const part = (p: Part, a: string): string | null => {
    if (p === 'key') out.keys.push(a);
    if (p === 'int' && !INT.test(a)) return `command '${cmd}' takes an integer, not '${a}'`;
    if (p === 'score' && !SCORE.test(a)) return `command '${cmd}' takes a score, not '${a}'`;
    return null;
  };
  const needed = s.args.length - (s.optional ?? 0);
  for (let n = 0; n < s.args.length; n++) {
    if (i >= args.length) {
      if (n >= needed) return out;
      return n === 0 && s.args[0] === 'key' ? `command '${cmd}' needs a key` : `command '${cmd}' needs more arguments`;
    }
    const bad = part(s.args[n]!, args[i++]!);
    if (bad) return bad;
    if (n === 0 && s.options?.at === 1) {
      const why = takeOptions();
      if (why) return why;
    }
  }
  // The repeated group, as many whole times as the arguments allow (ZADD: score member pairs).
  if (s.repeat) {
    const group = s.args.slice(head);
    while (i < args.length && (s.options?.at !== 'end' || words[args[i]!.toUpperCase()] === undefined)) {
      if (i + group.length > args.length) return `command '${cmd}' takes its last arguments in groups of ${group.length}`;
      for (const p of group) {
        const bad = part(p, args[i++]!);
        if (bad) return bad;
      }
    }
  }
  if (s.options?.at === 'end') {
    const why = takeOptions();
    if (why) return why;
  }
  if (i < args.length) return `command '${cmd}' takes no argument '${args[i]}' here`;
  return out;
};

/**
 * The key families whose names differ between the layouts (core/domain/keys.ts): the single
 * Redis name's prefix and the cluster one's, cut where the id would begin. `exact`: the whole key.
 */
const CUT = '\u0000';
const cut = (k: string): string => k.slice(0, k.indexOf(CUT) < 0 ? k.length : k.indexOf(CUT));
const FAMILIES: readonly { single: string; cluster: string; exact?: true; parking?: true }[] = [
  ...(['status', 'statusHistory', 'circuit', 'endpointLimit', 'domainLimit', 'endpointQueued', 'endpointsHll'] as const).map((f) => ({
    single: cut(keys[f](CUT)),
    cluster: cut(clusterKeys[f](CUT)),
  })),
  { single: cut(keys.stats(CUT, CUT)), cluster: cut(clusterKeys.stats(CUT, CUT)) },
  { single: cut(keys.retryData(CUT)), cluster: cut(clusterKeys.retryData(CUT)), parking: true },
  { single: keys.retries(), cluster: clusterKeys.retries(), exact: true, parking: true },
];

const inFamily = (key: string, prefix: string, exact?: true): boolean => (exact ? key === prefix : key.startsWith(prefix));

/**
 * A key of the other layout than the bridge's Redis: an edge whose HOWK_EDGE_REDIS_CLUSTER
 * does not match would read statuses that are never there and park webhooks where no
 * scheduler looks, so the bridge refuses it, naming the setting. On one Redis only the
 * parking keys are checked (a read of a cluster-shaped name finds nothing and harms nothing).
 */
const layoutRefusal = (cmd: string, keyArgs: readonly string[], cluster: boolean): string | null => {
  for (const k of keyArgs)
    for (const f of FAMILIES) {
      if (cluster && inFamily(k, f.single, f.exact) && !inFamily(k, f.cluster, f.exact))
        return `command '${cmd}' on key '${k}' of the single-Redis layout: this Redis is a cluster, set HOWK_EDGE_REDIS_CLUSTER=true at the edge`;
      if (!cluster && f.parking && inFamily(k, f.cluster, f.exact))
        return `command '${cmd}' on key '${k}' of the Redis Cluster layout: this Redis is no cluster, unset HOWK_EDGE_REDIS_CLUSTER (and HOWK_REDIS_CLUSTER_NODES) at the edge`;
    }
  return null;
};

/**
 * Why the edge may not run this command, or null when a grant allows it. `args` are the
 * command's arguments after its name; `cluster`: the bridge's Redis is a cluster, whose keys
 * the edge must name in the cluster layout.
 */
export const edgeRedisRefusal = (name: string, args: readonly string[], o: { cluster?: boolean } = {}): string | null => {
  const cmd = name.toLowerCase();
  const grants = EDGE_REDIS_GRANTS.filter((g) => g.commands.includes(cmd));
  const syntax = SYNTAX[cmd];
  if (!grants.length || !syntax) return `command '${cmd}' is not open to the edge`;
  const p = parse(cmd, syntax, args);
  if (typeof p === 'string') return p;
  const onKeys = grants.filter((g) => p.keys.every((k) => g.keys.some((pat) => matchesKey(pat, k))));
  if (!onKeys.length) return `command '${cmd}' on key '${p.keys.find((k) => !grants.some((g) => g.keys.some((pat) => matchesKey(pat, k)))) ?? p.keys[0]}' is not open to the edge`;
  const layout = layoutRefusal(cmd, p.keys, o.cluster ?? false);
  if (layout) return layout;
  let why = '';
  for (const g of onKeys) {
    const extra = p.options.find((o) => !g.options.includes(o));
    const missing = (g.requires ?? []).find((o) => !p.options.includes(o));
    if (extra === undefined && missing === undefined) return null;
    why ||=
      extra !== undefined
        ? `option '${extra}' of command '${cmd}' is not open to the edge on ${g.keys.join(', ')} (granted: ${g.options.join(', ') || 'none'})`
        : `command '${cmd}' on ${g.keys.join(', ')} without option '${missing}' is not open to the edge`;
  }
  return why;
};
