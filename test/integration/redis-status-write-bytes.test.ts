import { createRequire } from 'node:module';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { keys } from '../../core/domain/keys';
import { HISTORY_LIMIT } from '../../core/domain/status';
import type { HotTtls, StatusWrite } from '../../core/ports/hot-state';
import { createRedis } from '../../workers/redis/client';
import { RedisHotState } from '../../workers/redis/hot-state';
import { batchScript } from '../../workers/redis/script-call';
import { BATCH_SCRIPTS } from '../../workers/redis/scripts';
import { flushOwnDb, useRedisDb } from '../helpers/redis-db';

// The writeStatuses.lua call, encoded by hand (workers/redis/resp.ts), must put on the wire
// the bytes ioredis's own script command sent for the same call (an upgrade mixes old and new
// writers on one Redis): the arguments below are built as RedisHotState built them for
// ioredis, and ioredis's encoder turns them into the expected bytes.
const url = process.env.REDIS_URL;
if (!url) throw new Error('REDIS_URL is not set: the status write tests need a real Redis (scripts/infra/redis.sh start prints one)');
const db = useRedisDb();
const require = createRequire(import.meta.url);
type IoCommand = { toWritable(socket: object): string | Buffer };
const Script = (require('ioredis/built/Script') as { default: new (lua: string) => { Command: new (name: string, args: unknown[]) => IoCommand } }).default;
const TTLS: HotTtls = { status_ttl: 168 * 3_600_000, retry_data_ttl: 3_600_000, stats_ttl: 48 * 3_600_000 };

let redis: Redis;
let admin: Redis;
let hot: RedisHotState;
let sent: string[];
beforeAll(async () => {
  redis = createRedis(url, { db: db() });
  admin = createRedis(url, { db: db() });
  hot = new RedisHotState(redis, TTLS);
  await redis.ping();
  const stream = redis.stream as unknown as { write: (...a: unknown[]) => boolean };
  const write = stream.write.bind(stream);
  stream.write = (data: unknown, ...rest: unknown[]) => {
    sent?.push(String(data));
    return write(data, ...rest);
  };
});
afterAll(async () => {
  await Promise.all([hot.close(), admin.quit()]);
});
beforeEach(async () => {
  await flushOwnDb(admin, db());
  sent = [];
});

/** The arguments RedisHotState gave ioredis for writeStatuses.lua (after numkeys 0). */
const ioredisArgs = (statuses: StatusWrite[], floor: string): (string | number)[] => {
  const pairOf = (s: StatusWrite['status']) => (typeof s.config_id === 'string' && typeof s.endpoint_hash === 'string' ? `${s.config_id}\n${s.endpoint_hash}` : '');
  const once = new Set(statuses.map((s) => s.status.webhook_id)).size === statuses.length;
  const args: (string | number)[] = [keys.status(''), keys.statusHistory(''), TTLS.status_ttl, HISTORY_LIMIT, floor, once ? 0 : 1];
  const push = (withAttempt: StatusWrite[], without: StatusWrite[]) => {
    const s = (withAttempt[0] ?? without[0])!.status;
    const known = pairOf(s) !== '';
    if (known) args.push(keys.webhookIndex(s.config_id!), keys.webhookEndpointIndex(s.config_id!, s.endpoint_hash!), keys.webhookStateIndex(s.config_id!, ''));
    else args.push('', '', '');
    args.push(withAttempt.length, without.length);
    for (const w of withAttempt)
      args.push(JSON.stringify(w.status), w.status.updated_at_ns, w.patch ? '*' : (w.status.state ?? ''), w.status.webhook_id, JSON.stringify(w.attempt));
    for (const w of without) args.push(JSON.stringify(w.status), w.status.updated_at_ns, w.patch ? '*' : (w.status.state ?? ''), w.status.webhook_id);
  };
  if (once) {
    const blocks = new Map<string, { with: StatusWrite[]; without: StatusWrite[] }>();
    for (const s of statuses) {
      const pair = pairOf(s.status);
      if (!blocks.has(pair)) blocks.set(pair, { with: [], without: [] });
      blocks.get(pair)![s.attempt ? 'with' : 'without'].push(s);
    }
    for (const b of blocks.values()) push(b.with, b.without);
  } else {
    for (let i = 0; i < statuses.length;) {
      let end = i + 1;
      while (end < statuses.length && !!statuses[end]!.attempt === !!statuses[i]!.attempt && pairOf(statuses[end]!.status) === pairOf(statuses[i]!.status)) end++;
      const run = statuses.slice(i, end);
      push(statuses[i]!.attempt ? run : [], statuses[i]!.attempt ? [] : run);
      i = end;
    }
  }
  return args;
};

/** What ioredis's script command wrote for these arguments once the script was loaded (EVALSHA). */
const ioredisBytes = (args: (string | number)[]) => {
  const lua = BATCH_SCRIPTS.writeStatuses;
  const script = new Script(lua);
  const socket = {};
  new script.Command('evalsha', [batchScript(lua).sha, 0]).toWritable(socket);
  return String(new script.Command('evalsha', [batchScript(lua).sha, 0, ...args]).toWritable(socket));
};

const status = (id: string, config: string, ns: string, state: 'pending' | 'delivered' | 'failed', extra: object = {}) =>
  ({
    webhook_id: id,
    config_id: config,
    endpoint: `https://example.com/${config}/é`,
    endpoint_hash: `${config}-hash`,
    state,
    attempts: 0,
    updated_at_ns: ns,
    ...extra,
  }) as StatusWrite['status'];
const attempt = (n: number) =>
  ({ attempt: n, at: '2026-12-02T06:00:00.000Z', status_code: 500, error: 'bad \r\n$3\r\n gateway €😀', duration_ms: 12 }) as unknown as StatusWrite['attempt'];

/** The floor sent (its 5th argument) read back from the bytes: it follows the clock. */
const floorOf = (bytes: string) => bytes.split('\r\n')[16]!;

const BATCHES: Record<string, StatusWrite[]> = {
  'pending statuses of two configs and a patch of a held webhook': [
    { status: status('01KBWH0000000000000000000A', 'cfg_a', '1764655200000000001', 'pending') },
    { status: status('01KBWH0000000000000000000B', 'cfg_b', '1764655200000000002', 'pending') },
    { status: status('01KBWH0000000000000000000C', 'cfg_a', '1764655200000000003', 'pending') },
    { status: { webhook_id: '01KBWH0000000000000000000D', updated_at_ns: '1764655200000000004', state: 'failed' }, patch: true },
  ],
  'outcomes with attempts, one webhook written twice': [
    { status: status('01KBWH0000000000000000000E', 'cfg_a', '1764655200000000005', 'failed', { attempts: 1 }), attempt: attempt(1) },
    { status: status('01KBWH0000000000000000000F', 'cfg_a', '1764655200000000006', 'delivered', { attempts: 1 }), attempt: attempt(1) },
    { status: status('01KBWH0000000000000000000F', 'cfg_a', '1764655200000000007', 'pending') },
    { status: status('01KBWH0000000000000000000E', 'cfg_a', '1764655200000000008', 'delivered', { attempts: 2 }), attempt: attempt(2) },
  ],
};

describe('writeStatuses.lua call bytes', () => {
  for (const [name, statuses] of Object.entries(BATCHES)) {
    it(`are ioredis's for ${name}, first in the round trip, and write the statuses`, async () => {
      // The first call loads the script (NOSCRIPT, then EVAL); the bytes compared are the EVALSHA after.
      await hot.apply({ statuses, stats: { at: Date.now(), counts: { enqueued: statuses.length } } });
      sent = [];
      await hot.apply({ statuses, stats: { at: Date.now(), counts: { enqueued: statuses.length } } });
      const bytes = sent.join('');
      expect(bytes.startsWith('*')).toBe(true);
      expect(bytes.slice(0, ioredisBytes(ioredisArgs(statuses, floorOf(bytes))).length)).toBe(ioredisBytes(ioredisArgs(statuses, floorOf(bytes))));
      // The stats commands ride in the same round trip, after the script call.
      expect(bytes.length).toBeGreaterThan(ioredisBytes(ioredisArgs(statuses, floorOf(bytes))).length);
      const last = statuses.at(-1)!.status;
      expect((await hot.getStatus(last.webhook_id))?.updated_at_ns).toBe(last.updated_at_ns);
    });
  }

  it('reject as before when Redis answers with an error', async () => {
    await admin.set(keys.status('01KBWH0000000000000000000G'), 'not a hash');
    await expect(hot.apply({ statuses: [{ status: status('01KBWH0000000000000000000G', 'cfg_a', '1764655200000000009', 'pending') }] })).rejects.toMatchObject({
      name: 'ReplyError',
    });
  });
});
