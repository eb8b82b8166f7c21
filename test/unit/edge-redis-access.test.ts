import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { clusterKeys, keys } from '../../core/domain/keys';
import { EDGE_REDIS_GRANTS, edgeRedisRefusal } from '../../core/policy/edge-redis-access';

// What a leaked edge token can do to the fleet's Redis through howk-bridge.
describe('the edge Redis allowlist (commands and key patterns)', () => {
  const ok = (cmd: string, ...args: string[]) => expect(edgeRedisRefusal(cmd, args), `${cmd} ${args.join(' ')}`).toBeNull();
  const no = (cmd: string, ...args: string[]) => expect(edgeRedisRefusal(cmd, args), `${cmd} ${args.join(' ')}`).not.toBeNull();

  it('lets the edge read statuses, stats, capacity and the key table, and use kv', () => {
    ok('ping');
    ok('HGET', keys.status('wh_1'), 'data');
    ok('hmget', keys.status('wh_1'), 'data', 'h');
    ok('lrange', keys.statusHistory('wh_1'), '0', '-1');
    ok('mget', keys.stats('delivered', '2026010100'), keys.stats('failed', '2026010100'));
    ok('pfcount', keys.endpointsHll('2026010100'));
    ok('hmget', keys.domainLimit('api.example.com'), 'limit', 'lat');
    ok('hmget', keys.circuit('abc'), 'state');
    ok('zcard', keys.endpointQueued('abc'));
    ok('hget', keys.apiKeys(), '0123456789abcdef');
    ok('set', keys.kv({ kind: 'transformer', id: 't' }, 'seen'), '1', 'EX', '60');
    ok('del', keys.kv({ kind: 'transformer', id: 't' }, 'a'), keys.kv({ kind: 'transformer', id: 't' }, 'b'));
    ok('zadd', keys.retries(), 'NX', '1700000000000', 'wh_1');
    ok('set', keys.retryData('wh_1'), '{}', 'NX', 'PX', '1000');
    // Replay marks of signed /incoming requests: claimed (NX), answered (XX), given back.
    ok('set', keys.inboundReplay('t', 'ab12'), 'running', 'nx', 'get', 'px', '600000');
    ok('set', keys.inboundReplay('t', 'ab12'), '{"status":200}', 'xx', 'keepTtl');
    ok('del', keys.inboundReplay('t', 'ab12'));
    // Idempotency claims, shared with howk-api: claimed (NX GET, with a TTL), read, given back.
    ok('set', keys.idempotency('c', 'k'), 'wh_1 ab', 'NX', 'GET', 'PX', '86400000');
    ok('set', keys.idempotency('c', 'k'), 'wh_1 ab', 'XX', 'PX', '86400000');
    ok('get', keys.legacyIdempotency('c', 'k'));
    ok('del', keys.idempotency('c', 'k'));
  });

  it('refuses a replay mark written without NX or XX, and replay-mark commands on other keys', () => {
    no('set', keys.inboundReplay('t', 'ab12'), 'running');
    no('set', keys.inboundReplay('t', 'ab12'), 'running', 'PX', '1000');
    no('set', keys.status('wh_1'), 'running', 'NX');
    no('del', keys.inboundReplay('t', 'ab12'), keys.status('wh_1'));
  });

  it('refuses writes to fleet keys, other commands, and the schedule without NX', () => {
    no('set', keys.status('wh_1'), 'x');
    no('hset', keys.status('wh_1'), 'data', 'x');
    no('del', keys.status('wh_1'));
    no('del', keys.kv({ kind: 'config', id: 'c' }, 'a'), keys.retries());
    no('hset', keys.circuit('abc'), 'state', 'CLOSED');
    no('hget', keys.endpointErrors('abc'), 'x');
    no('llen', keys.statusHistory('wh_1'));
    no('lrange', keys.status('wh_1'), '0', '-1');
    // Idempotency claims are shared with howk-api: claimed with NX and a TTL, never overwritten.
    no('set', keys.idempotency('c', 'k'), 'wh_1');
    no('set', keys.idempotency('c', 'k'), 'wh_1', 'PX', '1000');
    no('set', keys.idempotency('c', 'k'), 'wh_1', 'XX');
    no('set', keys.idempotency('c', 'k'), 'wh_1', 'XX', 'KEEPTTL');
    no('set', keys.idempotency('c', 'k'), 'wh_1', 'NX', 'XX', 'PX', '1000');
    no('del', keys.idempotency('c', 'k'), keys.status('wh_1'));
    no('zadd', keys.retries(), '1', 'wh_1');
    no('zadd', keys.retries(), '1', 'NX');
    no('set', keys.retryData('wh_1'), 'NX');
    no('set', keys.retryData('wh_1'), '{}', 'PX', '1000');
    no('flushdb');
    no('eval', 'return 1', '0');
    no('keys', '*');
    no('hget');
  });

  it('refuses every option no grant names: the parking writes never read back or rewrite an entry', () => {
    const why = (cmd: string, ...args: string[]) => edgeRedisRefusal(cmd, args);
    // The attack: SET … NX GET answers the stored webhook (its custom headers included).
    expect(why('set', keys.retryData('wh_1'), 'x', 'NX', 'GET')).toMatch(/option 'GET' of command 'set'/);
    expect(why('set', keys.retryData('wh_1'), 'x', 'nx', 'get', 'PX', '1000')).toMatch(/'GET'/);
    expect(why('set', keys.retryData('wh_1'), 'x', 'NX', 'KEEPTTL')).toMatch(/option 'KEEPTTL' of command 'set'/);
    expect(why('set', keys.retryData('wh_1'), 'x', 'NX', 'EX', '10')).toMatch(/option 'EX'/);
    expect(why('set', keys.retryData('wh_1'), 'x', 'NX', 'XX')).toMatch(/option 'XX'/);
    expect(why('set', keys.retryData('wh_1'), 'x', 'NX', 'PXAT', '1')).toMatch(/option 'PXAT'/);
    expect(why('set', keys.retryData('wh_1'), 'x', 'NX', 'WHATEVER')).toMatch(/option 'WHATEVER' of command 'set' is unknown/);
    expect(why('set', keys.retryData('wh_1'), 'x', 'NX', 'PX')).toMatch(/needs 1 argument/);
    expect(why('zadd', keys.retries(), 'NX', 'CH', '1', 'wh_1')).toMatch(/option 'CH' of command 'zadd'/);
    expect(why('zadd', keys.retries(), 'NX', 'GT', '1', 'wh_1')).toMatch(/option 'GT'/);
    expect(why('zadd', keys.retries(), 'NX', 'LT', '1', 'wh_1')).toMatch(/option 'LT'/);
    expect(why('zadd', keys.retries(), 'NX', 'INCR', '1', 'wh_1')).toMatch(/option 'INCR'/);
    expect(why('zadd', keys.retries(), 'XX', 'NX', '1', 'wh_1')).toMatch(/option 'XX'/);
    // An option word in a score's place is no score: refused, not passed on for Redis to read.
    expect(why('zadd', keys.retries(), 'NX', 'FOO', '1', 'wh_1')).toMatch(/takes a score/);
    expect(why('zadd', keys.retries(), 'NX', '1', 'wh_1', '2')).toMatch(/groups of 2/);
    // The kv store takes the TTL the Lua module sets, nothing else.
    expect(why('set', keys.kv({ kind: 'transformer', id: 't' }, 'a'), '1', 'GET')).toMatch(/option 'GET'/);
    expect(why('set', keys.kv({ kind: 'transformer', id: 't' }, 'a'), '1', 'KEEPTTL')).toMatch(/option 'KEEPTTL'/);
    expect(why('expire', keys.kv({ kind: 'transformer', id: 't' }, 'a'), '10', 'GT')).toMatch(/option 'GT' of command 'expire'/);
    // Extra arguments where a command takes none, and the key table is read one id at a time.
    expect(why('hgetall', keys.apiKeys())).toMatch(/not open to the edge/);
    expect(why('hget', keys.apiKeys(), 'a', 'b')).toMatch(/takes no argument 'b'/);
    expect(why('incrby', keys.kv({ kind: 'transformer', id: 't' }, 'a'), 'x')).toMatch(/takes an integer/);
    expect(why('lrange', keys.statusHistory('wh_1'), '0')).toMatch(/needs more arguments/);
  });

  it('still allows every form the edge and its clients send', () => {
    const kv = keys.kv({ kind: 'transformer', id: 't' }, 'a');
    ok('set', keys.retryData('wh_1'), '{}', 'nx', 'px', '86400000');
    ok('zadd', keys.retries(), 'nx', '1700000000000', 'wh_1', '1700000000001', 'wh_2');
    ok('zadd', keys.retries(), 'NX', '+inf', 'wh_1');
    ok('set', kv, 'v');
    ok('set', kv, 'v', 'ex', '60');
    ok('get', kv);
    ok('mget', kv, kv);
    ok('incrby', kv, '5');
    ok('incr', kv);
    ok('ttl', kv);
    ok('expire', kv, '10');
    ok('exists', kv, kv);
    ok('hgetall', keys.status('wh_1'));
    ok('ping');
    ok('ping', 'hello');
    ok('echo', 'hello');
  });

  it("lets an edge in front of a Redis Cluster use the fleet's cluster key names, and nothing more", () => {
    const k = clusterKeys;
    // As the bridge on a cluster checks them.
    const ok = (cmd: string, ...args: string[]) => expect(edgeRedisRefusal(cmd, args, { cluster: true }), `${cmd} ${args.join(' ')}`).toBeNull();
    const no = (cmd: string, ...args: string[]) => expect(edgeRedisRefusal(cmd, args, { cluster: true }), `${cmd} ${args.join(' ')}`).not.toBeNull();
    ok('hmget', k.status('wh_1'), 'data', 'h');
    ok('lrange', k.statusHistory('wh_1'), '0', '-1');
    ok('mget', k.stats('delivered', '2026010100'), k.stats('failed', '2026010100'));
    ok('pfcount', k.endpointsHll('2026010100'), k.endpointsHll('2026010101'));
    ok('hmget', k.domainLimit('api.example.com'), 'limit', 'lat');
    ok('hmget', k.endpointLimit('abc'), 'limit');
    ok('hmget', k.circuit('abc'), 'state');
    ok('zcard', k.endpointQueued('abc'));
    ok('zadd', k.retries(), 'NX', '1700000000000', 'wh_1');
    ok('set', k.retryData('wh_1'), '{}', 'NX', 'PX', '1000');
    ok('set', k.idempotency('cfg', 'order-1'), 'wh_1', 'NX', 'GET', 'PX', '5000');
    ok('set', k.idempotency('cfg', 'order-1'), 'wh_1', 'XX', 'PX', '5000');
    ok('get', k.legacyIdempotency('cfg', 'order-1'));
    // Still refused: the retry shards (the scheduler's own), writes to guard keys, other commands.
    no('zadd', k.retryShard(3), 'NX', '1', 'wh_1');
    no('zadd', k.shardConfigs(3), 'NX', '1', 'cfg');
    no('hset', k.circuit('abc'), 'state', 'CLOSED');
    no('del', k.status('wh_1'));
    no('zadd', k.retries(), '1', 'wh_1');
  });

  it("refuses keys of the other layout than the bridge's Redis, naming the edge setting", () => {
    const onCluster = (cmd: string, ...args: string[]) => edgeRedisRefusal(cmd, args, { cluster: true });
    const onOne = (cmd: string, ...args: string[]) => edgeRedisRefusal(cmd, args, { cluster: false });
    // An edge left on the single-Redis names in front of a cluster: every differing key refused.
    for (const [cmd, ...args] of [
      ['hmget', keys.status('wh_1'), 'data'],
      ['lrange', keys.statusHistory('wh_1'), '0', '-1'],
      ['hmget', keys.circuit('abc'), 'state'],
      ['hmget', keys.endpointLimit('abc'), 'limit'],
      ['hmget', keys.domainLimit('api.example.com'), 'limit'],
      ['zcard', keys.endpointQueued('abc')],
      ['mget', clusterKeys.stats('delivered', '2026010100'), keys.stats('failed', '2026010100')],
      ['pfcount', keys.endpointsHll('2026010100')],
      ['zadd', keys.retries(), 'NX', '1', 'wh_1'],
      ['set', keys.retryData('wh_1'), '{}', 'NX', 'PX', '1000'],
      // A retry shard's data (the scheduler's) is no parking key on a cluster either.
      ['set', clusterKeys.shardRetryData(3, 'wh_1'), '{}', 'NX', 'PX', '1000'],
    ] as string[][])
      expect(onCluster(cmd!, ...args), `${cmd} ${args.join(' ')}`).toMatch(/single-Redis layout: this Redis is a cluster, set HOWK_EDGE_REDIS_CLUSTER=true/);
    // The cluster names, and the names both layouts share, pass on a cluster.
    expect(onCluster('hmget', clusterKeys.status('wh_1'), 'data')).toBeNull();
    expect(onCluster('mget', clusterKeys.stats('delivered', '2026010100'), clusterKeys.stats('failed', '2026010100'))).toBeNull();
    expect(onCluster('zadd', clusterKeys.retries(), 'NX', '1', 'wh_1')).toBeNull();
    expect(onCluster('set', clusterKeys.retryData('wh_1'), '{}', 'NX', 'PX', '1000')).toBeNull();
    expect(onCluster('set', keys.idempotency('cfg', 'k'), 'v', 'NX', 'GET', 'PX', '1000')).toBeNull();
    expect(onCluster('hget', keys.apiKeys(), 'id')).toBeNull();
    expect(onCluster('get', keys.kv({ kind: 'config', id: 'c' }, 'a'))).toBeNull();
    // An edge in cluster mode in front of one Redis: its parked webhooks would go where no scheduler looks.
    expect(onOne('zadd', clusterKeys.retries(), 'NX', '1', 'wh_1')).toMatch(/Redis Cluster layout: this Redis is no cluster, unset HOWK_EDGE_REDIS_CLUSTER/);
    expect(onOne('set', clusterKeys.retryData('wh_1'), '{}', 'NX', 'PX', '1000')).toMatch(/Redis Cluster layout/);
    expect(onOne('zadd', keys.retries(), 'NX', '1', 'wh_1')).toBeNull();
    expect(onOne('hmget', clusterKeys.status('wh_1'), 'data')).toBeNull();
  });

  it('is one table of grants, each naming its commands, keys and options', () => {
    for (const g of EDGE_REDIS_GRANTS) {
      expect(g.use.length).toBeGreaterThan(0);
      for (const o of [...g.options, ...(g.requires ?? [])]) expect(o).toBe(o.toUpperCase());
      for (const r of g.requires ?? []) expect(g.options).toContain(r);
    }
    // docs/EDGE.md shows the table as it is.
    const docs = readFileSync(new URL('../../docs/EDGE.md', import.meta.url), 'utf8');
    const code = (xs: readonly string[]) => xs.map((x) => `\`${x}\``).join(', ');
    const rows = EDGE_REDIS_GRANTS.map((g) => `| ${g.use} | ${code(g.commands)} | ${code(g.keys) || 'none'} | ${code(g.options) || 'none'} | ${code(g.requires ?? []) || '—'} |`);
    expect(docs).toContain(`| what | commands | keys | options it may carry | must carry |\n|---|---|---|---|---|\n${rows.join('\n')}\n\n`);
  });
});
