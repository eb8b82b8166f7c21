import { objectMembers, slice } from '../domain/raw-json';
import { decodeWebhook, encodeWebhook, type Webhook } from '../records/webhook';

// What leaves Howk for people (dead letters, status, listings, logs) carries no secret a
// tenant put in a header or an endpoint URL. Header NAMES are matched by pattern, not by a
// list: X-Auth, X-Session-Id, X-Upstream-Token are as secret as Authorization.

export const REDACTED = '[redacted]';

const SECRET_HEADER = /auth|token|secret|session|key|cookie|signature|passw|pwd|credential|csrf|xsrf|bearer|jwt/i;

export const isSecretHeader = (name: string): boolean => SECRET_HEADER.test(name);

export const redactHeaders = (h: Record<string, string>): Record<string, string> => Object.fromEntries(Object.entries(h).map(([k, v]) => [k, isSecretHeader(k) ? REDACTED : v]));

/**
 * An endpoint URL fit to show: userinfo (user:password@) always replaced, and EVERY query
 * value replaced (names kept): a query parameter's name says nothing reliable about its
 * value (`?k=`, `?sig=`, `?s=`), and the owner of the endpoint knows its own query. The
 * scheme, host, port and path stay, so a reader can still tell endpoints apart. Anything
 * that does not parse as a URL is shown as `[redacted]`.
 */
export const redactEndpoint = (endpoint: string): string => {
  let u: URL;
  try {
    u = new URL(endpoint);
  } catch {
    return REDACTED;
  }
  const auth = u.username || u.password ? `${REDACTED}@` : '';
  const query = [...u.searchParams.keys()].map((k) => `${encodeURIComponent(k)}=${REDACTED}`).join('&');
  return `${u.protocol}//${auth}${u.host}${u.pathname}${query ? `?${query}` : ''}`;
};

/** A webhook fit for a dead letter or a log line: no secret, secret-looking headers masked (the endpoint stays: a replay sends to it). */
export const redactWebhook = (w: Webhook): Webhook => {
  // awaited_by too: a wait is over by the time a dead letter exists, and a replay must not name it.
  const { signing_secret: _s, awaited_by: _a, ...rest } = w;
  return { ...rest, headers: redactHeaders(w.headers) };
};

/** A webhook as an API response shows it: redactWebhook, and its endpoint redacted too. */
export const webhookView = (w: Webhook): Webhook => ({ ...redactWebhook(w), endpoint: redactEndpoint(w.endpoint) });

/** A status (or listing row) as shown: the endpoint redacted. */
export const statusView = <S extends { endpoint: string }>(s: S): S => ({ ...s, endpoint: redactEndpoint(s.endpoint) });

/**
 * A stored dead letter record as shown, byte for byte but for its webhook: the endpoint
 * redacted and the headers masked again (records written before a pattern was added too).
 * The payload's bytes stay exactly as they were enqueued.
 */
export const deadLetterView = (record: string): string => {
  try {
    const span = objectMembers(record, 0).get('webhook');
    if (!span) return record;
    const w = webhookView(decodeWebhook(slice(record, span)));
    return `${record.slice(0, span.start)}${encodeWebhook(w)}${record.slice(span.end)}`;
  } catch {
    // Not a webhook this version can decode: shown re-serialized, masked all the same.
    const v = JSON.parse(record) as { webhook?: { endpoint?: unknown; headers?: unknown; signing_secret?: unknown } };
    if (v.webhook && typeof v.webhook === 'object') {
      delete v.webhook.signing_secret;
      if (typeof v.webhook.endpoint === 'string') v.webhook.endpoint = redactEndpoint(v.webhook.endpoint);
      if (v.webhook.headers && typeof v.webhook.headers === 'object') v.webhook.headers = redactHeaders(v.webhook.headers as Record<string, string>);
    }
    return JSON.stringify(v);
  }
};
