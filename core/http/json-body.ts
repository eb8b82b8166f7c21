import type { Context } from 'hono';
import type { z } from 'zod';
import { TooLargeError, ValidationError } from '../errors/errors';

/** Small JSON bodies of the admin routes: at most 64 KB, parsed and checked against a schema. */
export const MAX_ADMIN_BODY = 65_536;

export const readJsonBody = async <T extends z.ZodType>(c: Context, schema: T, opts: { optional?: boolean } = {}): Promise<z.infer<T>> => {
  const declared = Number(c.req.header('content-length') ?? 0);
  if (declared > MAX_ADMIN_BODY) throw new TooLargeError('request body', MAX_ADMIN_BODY);
  const text = await c.req.text();
  if (text.length > MAX_ADMIN_BODY) throw new TooLargeError('request body', MAX_ADMIN_BODY);
  let value: unknown = {};
  if (text.trim() !== '' || !opts.optional) {
    try {
      value = JSON.parse(text);
    } catch (e) {
      throw new ValidationError(`body is not valid JSON: ${(e as Error).message}`, 'body');
    }
  }
  const res = schema.safeParse(value);
  if (!res.success) throw ValidationError.fromZod(res.error, { root: 'body' });
  return res.data;
};
