import type { Webhook } from '../domain/webhook';

const SECRET_HEADER = /authorization|secret|token|api[-_]?key|signature|cookie|password/i;

export const redactHeaders = (h: Record<string, string>): Record<string, string> =>
  Object.fromEntries(Object.entries(h).map(([k, v]) => [k, SECRET_HEADER.test(k) ? '[redacted]' : v]));

/** A webhook fit for a dead letter or a log line: no secret, secret-looking headers masked. */
export const redactWebhook = (w: Webhook): Webhook => {
  const { signing_secret: _s, ...rest } = w;
  return { ...rest, headers: redactHeaders(w.headers) };
};
