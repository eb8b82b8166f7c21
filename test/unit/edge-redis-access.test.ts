import { describe, expect, it } from 'vitest';
import { keys } from '../../core/domain/keys';
import { edgeRedisRefusal } from '../../core/security/edge-redis-access';

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
    no('get', keys.idempotency('c', 'k'));
    no('zadd', keys.retries(), '1', 'wh_1');
    no('zadd', keys.retries(), '1', 'NX');
    no('set', keys.retryData('wh_1'), 'NX');
    no('set', keys.retryData('wh_1'), '{}', 'PX', '1000');
    no('flushdb');
    no('eval', 'return 1', '0');
    no('keys', '*');
    no('hget');
  });
});
