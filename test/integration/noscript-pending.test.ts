import { execFileSync } from 'node:child_process';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedis } from '../../workers/redis/client';
import { RedisHotState } from '../../workers/redis/hot-state';
import { DEFAULT_TTLS, ns, statusOf } from '../contract/hot-state.fixtures';
import { freePort } from '../helpers/procs';

// howk-api's 'pending' status write (statuses, their index entries and the enqueue stats in
// one pipeline of script calls) on a Redis whose script cache was emptied under it: a restart
// without persistence, a replica promoted, SCRIPT FLUSH. A redis-server of its own (SCRIPT
// FLUSH is server-wide), on a free loopback port, shut down after. The same on a Redis Cluster
// failover: test/replicated/noscript-failover.cluster.test.ts.

let port: number;
let admin: Redis;

beforeAll(async () => {
  port = await freePort();
  execFileSync('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--daemonize', 'yes']);
  admin = createRedis(`redis://127.0.0.1:${port}`, { onError: () => {} });
  for (let i = 0; i < 50 && (await admin.ping().catch(() => '')) !== 'PONG'; i++) await new Promise((r) => setTimeout(r, 100));
});

afterAll(async () => {
  await admin?.shutdown('NOSAVE').catch(() => {});
  admin?.disconnect();
});

const pending = (ids: string[]) => ({
  statuses: ids.map((id) => ({ status: statusOf(id, ns(Date.now())) })),
  stats: { at: Date.now(), counts: { enqueued: ids.length }, endpoints: ['ab'.repeat(16)] },
});

describe('a pending-status write after SCRIPT FLUSH', () => {
  it('loads its scripts again and is written', async () => {
    const state = new RedisHotState(createRedis(`redis://127.0.0.1:${port}`), DEFAULT_TTLS);
    try {
      await state.apply(pending(['wh_before']));
      const loaded = Number((await admin.info('memory')).match(/number_of_cached_scripts:(\d+)/)?.[1] ?? -1);
      expect(loaded).toBeGreaterThan(0);
      await admin.script('FLUSH');
      expect((await admin.info('memory')).match(/number_of_cached_scripts:(\d+)/)?.[1]).toBe('0');

      const ids = ['wh_a', 'wh_b', 'wh_c'];
      await state.apply(pending(ids));
      for (const id of ids) expect((await state.getStatus(id))?.state, id).toBe('pending');
      expect(Number((await admin.info('memory')).match(/number_of_cached_scripts:(\d+)/)?.[1])).toBeGreaterThan(0);
    } finally {
      await state.close();
    }
  });
});
