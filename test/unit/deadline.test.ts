import { describe, expect, it } from 'vitest';
import { settleWithin } from '../../core/domain/deadline';

const later = <T>(ms: number, v: T) => new Promise<T>((r) => setTimeout(() => r(v), ms));

describe('settleWithin', () => {
  it('passes an answer that comes in time through', async () => {
    await expect(settleWithin(later(5, 'ok'), 1000, () => new Error('late'))).resolves.toBe('ok');
  });

  it("rejects with the caller's error when no answer comes in time", async () => {
    await expect(settleWithin(new Promise(() => {}), 20, () => new Error('kafka produce timed out'))).rejects.toThrow('kafka produce timed out');
  });

  it('maps a rejection, and leaves it as it is without a mapper', async () => {
    const boom = Promise.reject(new Error('broker said no'));
    await expect(
      settleWithin(
        boom,
        1000,
        () => new Error('late'),
        (e) => new Error(`wrapped: ${(e as Error).message}`),
      ),
    ).rejects.toThrow('wrapped: broker said no');
    await expect(settleWithin(Promise.reject(new Error('raw')), 1000, () => new Error('late'))).rejects.toThrow('raw');
  });
});
