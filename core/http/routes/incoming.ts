import type { Context, Next } from 'hono';
import { z } from 'zod';
import { NotFoundError, RateLimitedError, UnavailableError } from '../../errors/errors';
import { redactEndpoint } from '../../pipeline/redact';
import { clientAddress, createAuthThrottle, type AuthThrottle } from '../../security/auth-throttle';
import {
  LuaError,
  LuaSyntaxError,
  redactDeep,
  redactor,
  runTransformer,
  type CredentialSession,
  type LuaHostServices,
  type Redactor,
  type TransformerInput,
  type TransformerOptions,
  type TransformerResult,
} from '../../lua';
import type { Config } from '../../config/schema';
import { transformerItems } from '../../transformers/items';
import { checkBasicAuth, configIdFor, TRANSFORMER_NAME, type AuthOutcome, type TransformerAuth, type TransformerScript } from '../../transformers/registry';
import { DEFAULT_TOLERANCE_SEC } from '../../signing/inbound';
import { authOf, checkSignature } from '../../transformers/guard';
import type { ApiDeps } from '../deps';
import { checkConfigId } from '../../domain/config-id';
import { enqueueItemSchema } from '../../domain/enqueue';
import type { Route, RouteHandler } from '../route';
import { limitBody } from './body-limit';
import { onceOnly, REPLAY_HEADER } from './incoming-once';

const IncomingResult = z.object({ webhooks: z.array(z.object({ id: z.string(), endpoint: z.string() })), count: z.number().int() });

/** What the handlers of one API instance share, built once. */
type Incoming = {
  d: ApiDeps;
  limits: Config['api'];
  /** The same limits as a batch enqueue (header count and sizes, endpoint length). */
  itemSchema: ReturnType<typeof enqueueItemSchema>;
  throttle: AuthThrottle;
};

const incomingHandler = (d: ApiDeps): RouteHandler[] => {
  const t = d.config.transformer;
  const k: Incoming = {
    d,
    limits: d.config.api,
    // Built once: building it costs ~0.8 ms, more than the Lua run (docs/BENCHMARKS.md, "Lua").
    itemSchema: enqueueItemSchema(d.config.api),
    throttle: createAuthThrottle({
      clientRate: t.auth_failure_rate,
      clientBurst: t.auth_failure_burst,
      transformerRate: t.auth_failure_rate_per_transformer,
      transformerBurst: t.auth_failure_burst_per_transformer,
      maxConcurrent: t.max_concurrent_auth_checks,
    }),
  };
  return [(c, next) => authorize(k, c, next), limitBody(k.limits.max_request_size), (c) => run(k, c)];
};

/** Credentials through the throttle: over a limit, refused before any password work. */
const authenticate = async ({ d, throttle }: Incoming, c: Context, name: string, auth: TransformerAuth): Promise<AuthOutcome> => {
  const header = c.req.header('authorization');
  // No passwd file, an unreadable one, or no credentials at all: nothing to guess, no work to bound.
  if (auth.kind !== 'passwd' || !header) return checkBasicAuth(auth, header, d.transformers?.verifyHash);
  const client = clientAddress(d.remoteAddress?.(c), c.req.header('x-forwarded-for'), d.config.api.trust_forwarded_for);
  const a = throttle.admit(client, name, d.clock.now());
  if (!a.ok) {
    d.log.warn('incoming auth throttled', { transformer: name, client, reason: a.reason });
    if (a.reason === 'busy') throw new UnavailableError('too many password checks at once', a.retryAfterSec);
    throw new RateLimitedError(
      a.reason === 'client' ? `too many failed credentials from this client for transformer ${name}` : `too many failed credentials for transformer ${name}`,
      a.retryAfterSec,
    );
  }
  let ok = false;
  try {
    const r = await checkBasicAuth(auth, header, d.transformers?.verifyHash);
    ok = r.ok;
    return r;
  } finally {
    a.ticket.done(ok);
  }
};

const authorize = async (k: Incoming, c: Context, next: Next): Promise<Response | void> => {
  const { d } = k;
  const name = c.req.param('name')!;
  const script = TRANSFORMER_NAME.test(name) ? d.transformers!.get(name) : undefined;
  if (!script) throw new NotFoundError(`transformer ${name}`);
  // Credentials before the body is read: an unauthenticated caller cannot make us buffer it.
  const scriptAuth = authOf(script, d.transformers!.secret);
  const auth = await authenticate(k, c, name, scriptAuth);
  if (!auth.ok) {
    c.header('WWW-Authenticate', `Basic realm="howk incoming ${name}", charset="UTF-8"`);
    return c.json({ error: { code: 'unauthorized', message: auth.message } }, 401);
  }
  return next();
};

const run = async (k: Incoming, c: Context): Promise<Response> => {
  const { d } = k;
  const name = c.req.param('name')!;
  const script = d.transformers!.get(name);
  if (!script) throw new NotFoundError(`transformer ${name}`);
  const raw = new Uint8Array(await c.req.arrayBuffer());
  // The signature is checked on the bytes as received, before anything parses them.
  const now = d.clock.now();
  const signed = await checkSignature(script, d.transformers!.secret, c.req.raw.headers, raw, now);
  const verify = script.settings.verify;
  if (!signed.ok) {
    const provider = verify!.provider;
    d.log.warn('inbound signature refused; nothing run', { transformer: name, provider, reason: signed.reason });
    return c.json({ error: { code: 'unauthorized', reason: signed.reason, message: `${provider} signature verification failed: ${signed.detail}` } }, 401);
  }
  const once = { store: d.inboundReplays, log: d.log, transformer: name, provider: verify?.provider ?? 'none', mark: signed.replay, now };
  return onceOnly(c, { ...once, toleranceSec: verify?.tolerance ?? DEFAULT_TOLERANCE_SEC }, () => transform(k, c, name, script, raw));
};

/** The script's run and the enqueue of what it posted. */
const transform = async (k: Incoming, c: Context, name: string, script: TransformerScript, raw: Uint8Array): Promise<Response> => {
  const { d } = k;
  const input = scriptInput(c, name, script, authOf(script, d.transformers!.secret).kind, raw);
  const configId = configIdFor(script);
  checkConfigId(configId);
  const { credentials, ...host } = d.lua?.forNamespace(`incoming:${name}`, script.settings.allowed_hosts) ?? {};
  const redact = (): Redactor => redactor(credentials?.used.map((u) => u.plaintext) ?? []);
  let result: TransformerResult;
  try {
    result = await runTransformer(script.code, input, transformerOptions(k, name, script, host, redact));
  } catch (e) {
    if (!(e instanceof LuaError)) throw e;
    const message = redact()(e.message);
    d.log.warn('transformer failed; nothing enqueued', { transformer: name, reason_type: e.code, error: message });
    return c.json({ error: { code: e.code, reason_type: e.code, message, line: e.line ?? null } }, e instanceof LuaSyntaxError ? 400 : 422);
  }
  const refused = credentialRefusal(credentials, result.webhooks);
  if (refused) {
    d.log.warn('transformer refused; nothing enqueued', { transformer: name, reason_type: 'credential_host_not_allowed', error: refused });
    return c.json({ error: { code: 'credential_host_not_allowed', reason_type: 'credential_host_not_allowed', message: refused, line: null } }, 422);
  }
  if (!result.webhooks.length) return c.json({ webhooks: [], count: 0 });
  // Templates only: name.json's _delivery_* for every webhook, howk.post's opts per webhook (they win).
  const items = transformerItems(name, result.webhooks, k.itemSchema, {
    delivery_headers: script.settings.delivery_headers,
    delivery_query_params: script.settings.delivery_query_params,
  });
  const results = await d.enqueue(configId, items);
  // The caller is the sender of the inbound body: endpoints the script built (tokens from its settings) are shown redacted.
  return c.json({ webhooks: results.map((r) => ({ id: r.webhook_id, endpoint: redactEndpoint(r.endpoint) })), count: results.length });
};

/** The request as the script sees it: raw body, headers, query, method and path. */
const scriptInput = (c: Context, name: string, script: TransformerScript, authKind: TransformerAuth['kind'], raw: Uint8Array): TransformerInput => {
  const body = new TextDecoder().decode(raw);
  const headers: Record<string, string> = {};
  c.req.raw.headers.forEach((v, k) => {
    // The script's own credentials are not its input.
    if (k === 'authorization' && authKind !== 'none') return;
    headers[k] = v;
  });
  const query: Record<string, string | string[]> = {};
  const url = new URL(c.req.url);
  for (const k of new Set(url.searchParams.keys())) {
    const all = url.searchParams.getAll(k);
    query[k] = all.length === 1 ? all[0]! : all;
  }
  return { body, headers, query, method: c.req.method, path: url.pathname, script: name };
};

const transformerOptions = (
  { d, limits }: Incoming,
  name: string,
  script: TransformerScript,
  host: Omit<ReturnType<LuaHostServices['forNamespace']>, 'credentials'>,
  redact: () => Redactor,
): TransformerOptions => ({
  allowedDomains: script.settings.allowed_domains,
  maxWebhooks: Math.min(script.settings.max_webhooks ?? limits.max_batch_size, limits.max_batch_size),
  limits: { timeoutMs: d.config.lua.timeout, memoryLimitMb: d.config.lua.memory_limit_mb },
  engine: d.lua?.engine,
  // http namespace incoming:<name> (lua.http_allowlist), plus the script's own allowed_hosts.
  services: {
    kv: d.luaKv,
    ...host,
    log: (level, message, fields) => {
      const r = redact();
      d.log[level](`transformer ${name}: ${r(message)}`, { ...(redactDeep(r, fields) as Record<string, unknown>), transformer: name });
    },
  },
});

/** A run that opened a credential may only post to that credential's hosts (all or nothing): why not, if not. */
const credentialRefusal = (credentials: CredentialSession | undefined, webhooks: TransformerResult['webhooks']): string | undefined => {
  for (const w of webhooks) {
    const bad = credentials?.hostRefusal(new URL(w.endpoint).hostname);
    if (bad) return `credential ${bad.name} may not be sent to ${new URL(w.endpoint).hostname}`;
  }
  return undefined;
};

/**
 * POST /incoming/:name — runs a transformer on the inbound body; every `howk.post` of the run
 * becomes a webhook, enqueued in ONE call after the run succeeded (all or nothing). Open to
 * API keys: a transformer has its own Basic auth and provider signature (docs/SECURITY.md).
 * One handler for howk-api, howk-dev and the edge: each runtime supplies only its
 * `transformers` (where the files and secrets come from), `lua` (the engine's host) and `luaKv`.
 */
export const incomingRoutes: Route[] = [
  {
    method: 'post',
    path: '/incoming/:name',
    tag: 'incoming',
    access: 'open',
    needs: ['transformers'],
    summary:
      'Run a transformer on the raw body; every howk.post of the run is enqueued, all or nothing (422/400 with the Lua error and its reason_type otherwise). Basic auth when the script has a passwd file',
    request: { params: z.object({ name: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/) }), body: () => ({ description: 'any body; the script reads it raw' }), media: 'any' },
    responses: {
      '200': {
        description: `enqueued; a copy of a signed request (Stripe, Standard Webhooks, Svix) within its signature window gets the first run's answer again, with ${REPLAY_HEADER}: true, and nothing runs`,
        schema: IncomingResult,
        headers: { [REPLAY_HEADER]: { schema: { type: 'string', enum: ['true'] } } },
      },
      '409': { description: 'replay_in_progress: a copy of this signed request is still running; retry for its answer', schema: { $ref: '#/components/schemas/Error' } },
    },
    handler: (d) => incomingHandler(d),
  },
];
