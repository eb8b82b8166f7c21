import { Hono, type Context } from 'hono';
import { ForbiddenError, ValidationError } from '../../core/errors/errors';
import { edgeRedisRefusal } from '../../core/policy/edge-redis-access';
import { toHowkError } from '../redis/exec';
import { withScripts } from '../redis/scripts';
import type { RedisClient } from '../redis/client';
import { pipe, slotsOfCommands } from '../redis/slots';
import type { BridgeCounters } from './counters';

// The subset of the Upstash Redis REST dialect that @upstash/redis sends: POST / with one
// command as a JSON array, POST /pipeline and POST /multi-exec with arrays of them. Only
// granted commands run, each only on the keys and with the options its grant names
// (core/policy/edge-redis-access.ts): anything else refuses the whole request with 403,
// nothing of it run. With `Upstash-Encoding: base64` string replies travel
// base64-encoded (the client decodes them; a bare "OK" stays as is, as Upstash does).

type Arg = string | number;
type Command = [string, ...Arg[]];
/** One command's reply in a /pipeline or /multi-exec answer, as Upstash words it. */
type UpstashReply = { result: unknown } | { error: string };

const encode = (v: unknown, b64: boolean): unknown => {
  if (v === null || v === undefined) return null;
  if (Buffer.isBuffer(v)) {
    const text = v.toString('utf8');
    return b64 && text !== 'OK' ? v.toString('base64') : text;
  }
  if (typeof v === 'string') return b64 && v !== 'OK' ? Buffer.from(v, 'utf8').toString('base64') : v;
  if (Array.isArray(v)) return v.map((x) => encode(x, b64));
  return v;
};

const replyOf = (err: Error | null, value: unknown, b64: boolean): UpstashReply => {
  if (err) {
    const e = toHowkError(err);
    if (e.name !== 'ReplyError') throw e;
    return { error: err.message };
  }
  return { result: encode(value, b64) };
};

export const redisRoutes = (redis: RedisClient, commands: readonly string[], counters: BridgeCounters, maxCommands = 1000) => {
  const app = new Hono();
  const allowed = new Set(commands.map((c) => c.toLowerCase()));
  let syncToken = 0;

  const check = (cmd: unknown, where: string): Command => {
    if (!Array.isArray(cmd) || cmd.length === 0 || typeof cmd[0] !== 'string')
      throw new ValidationError(`${where}: a command is a non-empty JSON array starting with its name`, where);
    const name = cmd[0].toLowerCase();
    for (const a of cmd.slice(1)) {
      if (typeof a !== 'string' && typeof a !== 'number') throw new ValidationError(`${where}: arguments must be strings or numbers`, where);
    }
    const args = cmd.slice(1).map((a: Arg) => (typeof a === 'number' ? String(a) : a));
    if (!allowed.has(name)) throw new ForbiddenError(`ERR command '${name}' is not allowed through howk-bridge`);
    const refused = edgeRedisRefusal(name, args, { cluster: redis.isCluster });
    if (refused) throw new ForbiddenError(`ERR ${refused} through howk-bridge`);
    return [name, ...args] as Command;
  };

  const readCommands = async (c: Context, many: boolean): Promise<Command[]> => {
    let body: unknown;
    try {
      body = await c.req.json();
    } catch {
      throw new ValidationError('body is not valid JSON', 'body');
    }
    if (!many) return [check(body, 'command')];
    if (!Array.isArray(body) || body.length === 0) throw new ValidationError('body must be a non-empty array of commands', 'body');
    if (body.length > maxCommands) throw new ValidationError(`at most ${maxCommands} commands per request`, 'body');
    return body.map((cmd, i) => check(cmd, `commands.${i}`));
  };

  const respond = (c: Context, body: unknown, status: 200 | 400 = 200) => {
    c.header('upstash-sync-token', String(++syncToken));
    return c.json(body, status);
  };

  const b64 = (c: Context) => (c.req.header('upstash-encoding') ?? '').toLowerCase() === 'base64';

  app.post('/', async (c) => {
    const [[name, ...args]] = (await readCommands(c, false)) as [Command];
    counters.redisRequests++;
    counters.redisCommands++;
    try {
      return respond(c, { result: encode(await redis.callBuffer(name, ...args), b64(c)) });
    } catch (e) {
      const err = toHowkError(e);
      if (err.name === 'ReplyError') return respond(c, { error: err.message }, 400);
      throw err;
    }
  });

  const batch = (transaction: boolean) => async (c: Context) => {
    const cmds = await readCommands(c, true);
    counters.redisRequests++;
    counters.redisCommands += cmds.length;
    // On a Redis Cluster a pipeline goes out per slot; a MULTI must keep to one (Redis refuses more).
    if (transaction && redis.isCluster && slotsOfCommands(cmds).size > 1) throw new ValidationError('a MULTI on a Redis Cluster must keep its keys in one hash slot', 'body');
    const p = transaction ? redis.multi() : pipe(withScripts(redis));
    for (const [name, ...args] of cmds) p.callBuffer(name, ...args);
    let replies: [Error | null, unknown][] | null;
    try {
      replies = await p.exec();
    } catch (e) {
      throw toHowkError(e);
    }
    if (!replies) return respond(c, { error: 'EXECABORT Transaction discarded' }, 400);
    const enc = b64(c);
    return respond(
      c,
      replies.map(([err, v]) => replyOf(err, v, enc)),
    );
  };
  app.post('/pipeline', batch(false));
  app.post('/multi-exec', batch(true));
  return app;
};
