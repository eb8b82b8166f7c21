import { afterEach, describe, expect, it } from 'vitest';
import { UnavailableError } from '../../core/errors/errors';
import { call, onRedisFailure } from '../../workers/redis/exec';

describe('Redis failures counted (howk_redis_errors_total)', () => {
  afterEach(() => onRedisFailure(undefined));

  it('counts a command that failed for want of Redis, not an error reply', async () => {
    const seen: string[] = [];
    onRedisFailure((op) => seen.push(op));
    await expect(call(() => Promise.reject(new Error('Connection is closed.')))).rejects.toBeInstanceOf(UnavailableError);
    const reply = Object.assign(new Error('WRONGTYPE Operation against a key holding the wrong kind of value'), { name: 'ReplyError' });
    await expect(call(() => Promise.reject(reply))).rejects.toBe(reply);
    expect(seen).toEqual(['command']);
  });
});
