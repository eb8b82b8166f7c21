import type { Context } from 'hono';
import type { z } from 'zod';
import { ValidationError } from '../errors/errors';
import { readLimited } from './routes/body-limit';

/** Small JSON bodies of the admin routes: at most 64 KB, parsed and checked against a schema. */
export const MAX_ADMIN_BODY = 65_536;

/** The body read with the one body limit (routes/body-limit.ts): never more than MAX_ADMIN_BODY bytes held. */
export const readJsonBody = async <T extends z.ZodType>(c: Context, schema: T, opts: { optional?: boolean } = {}): Promise<z.infer<T>> => {
  const text = new TextDecoder().decode(await readLimited(c, MAX_ADMIN_BODY));
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
