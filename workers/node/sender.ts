import { Agent, request } from 'undici';
import type { DeliveryRequest, DeliveryResponse, Sender } from '../../core/ports/sender';

export type SenderOptions = { connectionsPerOrigin: number; snippetBytes: number; keepAliveMs?: number };

const MAX_DRAIN = 64 * 1024;

/**
 * Keep-alive delivery over undici. Redirects are not followed (a 3xx is the endpoint's
 * answer). The response body is read for its first bytes only; past 64 KB the connection
 * is dropped rather than draining an unbounded body.
 */
export const createHttpSender = (o: SenderOptions): Sender => {
  const agent = new Agent({ connections: o.connectionsPerOrigin, keepAliveTimeout: o.keepAliveMs ?? 30_000, pipelining: 1 });
  return {
    async send(req: DeliveryRequest): Promise<DeliveryResponse> {
      const t0 = performance.now();
      const ms = () => Math.round((performance.now() - t0) * 100) / 100;
      try {
        const res = await request(req.url, {
          method: 'POST',
          headers: req.headers,
          body: req.body,
          dispatcher: agent,
          signal: AbortSignal.timeout(req.timeoutMs),
          headersTimeout: req.timeoutMs,
          bodyTimeout: req.timeoutMs,
        });
        let snippet = '';
        let read = 0;
        for await (const chunk of res.body) {
          const buf = chunk as Buffer;
          if (snippet.length < o.snippetBytes) snippet += buf.subarray(0, o.snippetBytes - snippet.length).toString('utf8');
          read += buf.length;
          if (read > MAX_DRAIN) {
            res.body.destroy();
            break;
          }
        }
        const ra = res.headers['retry-after'];
        return { kind: 'response', status: res.statusCode, retryAfter: Array.isArray(ra) ? (ra[0] ?? null) : (ra ?? null), bodySnippet: snippet, durationMs: ms() };
      } catch (e) {
        const err = e as { name?: string; code?: string; message?: string };
        const timeout = err.name === 'TimeoutError' || err.name === 'AbortError' || err.code === 'UND_ERR_HEADERS_TIMEOUT' || err.code === 'UND_ERR_BODY_TIMEOUT';
        return { kind: timeout ? 'timeout' : 'network', error: timeout ? `no response within ${req.timeoutMs} ms` : (err.code ? `${err.code}: ${err.message}` : String(err.message ?? e)), durationMs: ms() };
      }
    },
    close: () => agent.close(),
  };
};

/** howk-dev --dry: logs the delivery and answers 200 without any HTTP. */
export const createDrySender = (onSend: (req: DeliveryRequest) => void): Sender => ({
  async send(req) {
    onSend(req);
    return { kind: 'response', status: 200, retryAfter: null, bodySnippet: '', durationMs: 0 };
  },
  async close() {},
});
