import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ValidationError } from '../../core/errors/errors';

// ValidationError.fromZod: the one way a zod error becomes the 400 body's message, field and issues.

const Body = z.object({
  endpoint: z.string({ error: 'endpoint is required' }),
  items: z.array(z.object({ n: z.number({ error: 'n must be a number' }) })).optional(),
  headers: z.record(z.string().regex(/^[a-z-]+$/, 'bad name'), z.string()).optional(),
});

const errorOf = (schema: z.ZodType, value: unknown): z.ZodError => {
  const r = schema.safeParse(value);
  if (r.success) throw new Error('expected the value to be refused');
  return r.error;
};

describe('ValidationError.fromZod', () => {
  it('names each issue by its dotted path (array indexes included), the first as field', () => {
    const e = ValidationError.fromZod(errorOf(Body, { items: [{ n: 1 }, { n: 'x' }] }));
    expect(e).toBeInstanceOf(ValidationError);
    expect(e.code).toBe('invalid_request');
    expect(e.issues).toEqual([
      { path: 'endpoint', message: 'endpoint is required' },
      { path: 'items.1.n', message: 'n must be a number' },
    ]);
    expect(e.field).toBe('endpoint');
    expect(e.message).toBe('endpoint: endpoint is required; items.1.n: n must be a number');
  });

  it('puts `at` before every path and `prefix` before the message', () => {
    const e = ValidationError.fromZod(errorOf(Body, { endpoint: 1 }), { at: 'webhooks.3', prefix: 'transformer t posted an invalid webhook: ' });
    expect(e.issues).toEqual([{ path: 'webhooks.3.endpoint', message: 'endpoint is required' }]);
    expect(e.field).toBe('webhooks.3.endpoint');
    expect(e.message).toBe('transformer t posted an invalid webhook: webhooks.3.endpoint: endpoint is required');
  });

  it('names an issue about the whole value `root`, or nothing without one', () => {
    const err = errorOf(Body, 'not an object');
    expect(ValidationError.fromZod(err, { root: 'body' }).issues[0]!.path).toBe('body');
    expect(ValidationError.fromZod(err, { root: 'body' }).field).toBe('body');
    expect(ValidationError.fromZod(err).issues[0]!.path).toBe('');
    expect(ValidationError.fromZod(err, { at: 'webhooks.0', root: 'body' }).issues[0]!.path).toBe('webhooks.0');
  });

  it('leaves out empty segments: an empty `at` and an empty record key', () => {
    const e = ValidationError.fromZod(errorOf(Body, { endpoint: 'x', headers: { '': 'v' } }), { at: '' });
    expect(e.issues.map((i) => i.path)).toEqual(['headers']);
    expect(e.field).toBe('headers');
  });
});
