import type { Context } from 'hono';
import { ValidationError } from '../errors/errors';
import type { Logger } from '../ports/logger';
import { errorResponse } from './errors';

// Errors of the Svix API (/api/v1) in the shape its clients read: `{code, detail}`, and 422
// with `detail: [{loc, msg, type}]` for invalid input. Howk's own `error: {code, message}`
// stays beside them, so one error reader works on every route.

export const SVIX_PREFIX = '/api/v1/';

const validationDetail = (e: ValidationError) =>
  (e.issues.length ? e.issues : [{ path: e.field ?? 'body', message: e.message }]).map((i) => {
    const path = i.path.split('.').filter((p) => p !== '');
    return { loc: path[0] === 'body' || path[0] === 'query' ? path : ['body', ...path], msg: i.message, type: 'value_error' };
  });

export const svixErrorResponse = async (c: Context, e: unknown, log?: Logger): Promise<Response> => {
  const res = errorResponse(c, e, log);
  const { error } = (await res.clone().json()) as { error: { code: string; message: string } };
  const invalid = e instanceof ValidationError;
  const body = { code: invalid ? 'validation' : error.code, detail: invalid ? validationDetail(e) : error.message, error };
  return new Response(JSON.stringify(body), { status: invalid ? 422 : res.status, headers: res.headers });
};
