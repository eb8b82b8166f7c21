import { Agent, type Dispatcher } from 'undici';
import type { Config } from '../../core/config/schema';
import { urlParts, type UrlParts } from '../../core/domain/memo';
import type { DeliveryRequest, DeliveryResponse, Sender } from '../../core/ports/sender';
import type { Logger } from '../../core/ports/logger';
import { destinationPolicy } from '../../core/security/destination';
import { findHeaderIssue } from '../../core/domain/headers';
import { guardedConnector, isBlockedError } from './ssrf-guard';

export type SenderOptions = {
  connectionsPerOrigin: number;
  snippetBytes: number;
  keepAliveMs?: number;
  /** CIDR ranges opened past the SSRF guard (delivery.allowed_networks); other non-public addresses are refused. */
  allowedNetworks?: readonly string[];
};

const MAX_DRAIN = 64 * 1024;
const RETRY_AFTER = 'retry-after';

/**
 * Errors undici raises synchronously inside dispatch that say nothing about the endpoint: the
 * request could not be built (a header or body it refuses), or the pool is closing.
 */
const LOCAL_DISPATCH_ERRORS: Record<string, 'invalid_request' | 'local_error'> = {
  UND_ERR_INVALID_ARG: 'invalid_request',
  UND_ERR_NOT_SUPPORTED: 'invalid_request',
  UND_ERR_CLOSED: 'local_error',
  UND_ERR_DESTROYED: 'local_error',
};

/**
 * One delivery on undici's dispatcher interface: no response stream, no AbortSignal, no
 * async iterator per request (they dominated the sender's cost in the benchmark). A plain
 * timer bounds the whole attempt, as AbortSignal.timeout did.
 */
class DeliveryHandler implements Dispatcher.DispatchHandler {
  private abortFn: ((err: Error) => void) | undefined;
  private done = false;
  /** True while agent.dispatch runs: an error then was raised building the request, before any connection was used. */
  dispatching = false;
  refused: 'invalid_request' | 'local_error' | undefined;
  private status = 0;
  private retryAfter: string | null = null;
  private snippet = '';
  private read = 0;
  private writtenMs: number | undefined;
  private readonly timer: ReturnType<typeof setTimeout>;

  constructor(
    private readonly timeoutMs: number,
    private readonly snippetBytes: number,
    private readonly t0: number,
    private readonly resolve: (r: DeliveryResponse) => void,
  ) {
    this.timer = setTimeout(() => this.onTimeout(), timeoutMs);
    this.timer.unref();
  }

  private ms(): number {
    return Math.round((performance.now() - this.t0) * 100) / 100;
  }

  private finish(r: DeliveryResponse): void {
    if (this.done) return;
    this.done = true;
    clearTimeout(this.timer);
    this.resolve(r);
  }

  private timeoutResult(): DeliveryResponse {
    return { kind: 'timeout', error: `no response within ${this.timeoutMs} ms`, durationMs: this.ms() };
  }

  private onTimeout(): void {
    if (this.done) return;
    this.finish(this.timeoutResult());
    // Still queued for a connection: onConnect aborts it as soon as it gets one.
    this.abortFn?.(new Error('delivery timed out'));
  }

  onConnect(abort: (err?: Error) => void): void {
    this.abortFn = abort;
    if (this.done) abort(new Error('delivery timed out'));
  }

  onRequestSent(): void {
    this.writtenMs = this.ms();
  }

  onHeaders(statusCode: number, rawHeaders: Buffer[]): boolean {
    if (statusCode < 200) return true; // 1xx: the final answer follows
    this.status = statusCode;
    for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
      const name = rawHeaders[i]!;
      if (name.length === RETRY_AFTER.length && name.toString('latin1').toLowerCase() === RETRY_AFTER) {
        this.retryAfter = rawHeaders[i + 1]!.toString('latin1');
        break;
      }
    }
    return true;
  }

  onData(chunk: Buffer): boolean {
    if (this.done) return false;
    if (this.snippet.length < this.snippetBytes) this.snippet += chunk.subarray(0, this.snippetBytes - this.snippet.length).toString('utf8');
    this.read += chunk.length;
    if (this.read > MAX_DRAIN) {
      // Past the drain limit the connection is dropped rather than read to its end.
      this.finish(this.response());
      this.abortFn?.(new Error('response body over the drain limit'));
      return false;
    }
    return true;
  }

  onComplete(): void {
    this.finish(this.response());
  }

  onError(e: Error): void {
    if (this.done) return;
    if (isBlockedError(e)) return this.finish({ kind: 'blocked', error: e.message, durationMs: this.ms() });
    const code = (e as { code?: string }).code ?? '';
    if (this.dispatching && Object.hasOwn(LOCAL_DISPATCH_ERRORS, code)) {
      const kind = (this.refused = LOCAL_DISPATCH_ERRORS[code]!);
      return this.finish({ kind, error: `${code}: ${e.message}`, durationMs: this.ms() });
    }
    const err = e as { name?: string; code?: string; message?: string };
    const timeout = err.name === 'TimeoutError' || err.code === 'UND_ERR_HEADERS_TIMEOUT' || err.code === 'UND_ERR_BODY_TIMEOUT';
    this.finish(timeout ? this.timeoutResult() : { kind: 'network', error: err.code ? `${err.code}: ${err.message}` : String(err.message ?? e), durationMs: this.ms() });
  }

  private response(): DeliveryResponse {
    return {
      kind: 'response',
      status: this.status,
      retryAfter: this.retryAfter,
      bodySnippet: this.snippet,
      durationMs: this.ms(),
      ...(this.writtenMs !== undefined ? { writtenMs: this.writtenMs } : {}),
    };
  }
}

/**
 * Keep-alive delivery over undici. Redirects are not followed (a 3xx is the endpoint's
 * answer). The response body is read for its first bytes only; past 64 KB the connection
 * is dropped rather than draining an unbounded body.
 */
export const createHttpSender = (o: SenderOptions): Sender => {
  // Every new connection goes through the SSRF guard (workers/node/ssrf-guard.ts).
  const connect = guardedConnector(destinationPolicy(o.allowedNetworks ?? []));
  const newAgent = () => new Agent({ connections: o.connectionsPerOrigin, keepAliveTimeout: o.keepAliveMs ?? 30_000, pipelining: 1, connect });
  let agent = newAgent();
  return {
    send(req: DeliveryRequest): Promise<DeliveryResponse> {
      const t0 = performance.now();
      return new Promise<DeliveryResponse>((resolve) => {
        let t: UrlParts;
        try {
          t = urlParts(req.url);
        } catch (e) {
          const err = e as { code?: string; message?: string };
          resolve({ kind: 'network', error: err.code ? `${err.code}: ${err.message}` : String(err.message ?? e), durationMs: 0 });
          return;
        }
        // undici raises a header it refuses inside its pool, where the error leaves that
        // origin's connection slot waiting forever for a drain: such a request never reaches it.
        const bad = findHeaderIssue(req.headers);
        if (bad) {
          resolve({ kind: 'invalid_request', error: `header ${bad.name}: ${bad.message}`, durationMs: 0 });
          return;
        }
        const handler = new DeliveryHandler(req.timeoutMs, o.snippetBytes, t0, resolve);
        handler.dispatching = true;
        agent.dispatch(
          { origin: t.origin, path: t.path, method: 'POST', headers: req.headers, body: req.body, headersTimeout: req.timeoutMs, bodyTimeout: req.timeoutMs },
          handler,
        );
        handler.dispatching = false;
        if (handler.refused === 'invalid_request') {
          // Something the check above missed reached the pool and cost it a slot: new requests
          // go to a fresh agent; the old one finishes its requests in flight, then closes.
          const old = agent;
          agent = newAgent();
          void old.close().catch(() => {});
        }
      });
    },
    close: () => agent.close(),
  };
};

/**
 * What a dry run logs of a delivery: the endpoint without user info, and query parameters
 * by name only (`?api_key=[redacted]`): a query value may be a ${VAR} secret resolved for
 * this request, and headers and body may carry credentials, so neither is logged.
 */
export const dryRunFields = (req: DeliveryRequest): Record<string, unknown> => {
  let endpoint: string;
  try {
    const u = new URL(req.url);
    const names = [...new Set(u.searchParams.keys())];
    endpoint = `${u.protocol}//${u.host}${u.pathname}${names.length ? `?${names.map((n) => `${encodeURIComponent(n)}=[redacted]`).join('&')}` : ''}`;
  } catch {
    endpoint = '[unparsable url]';
  }
  return { webhook_id: req.headers['webhook-id'], endpoint, payload_bytes: req.body.length };
};

/** worker.dry_run: logs each delivery (dryRunFields) and answers 200 without any HTTP. */
export const createDryRunSender = (log: Pick<Logger, 'info'>): Sender => createDrySender((r) => log.info('DRY: would deliver', dryRunFields(r)));

/** howk-dev --dry: logs the delivery and answers 200 without any HTTP. */
export const createDrySender = (onSend: (req: DeliveryRequest) => void): Sender => ({
  async send(req) {
    onSend(req);
    return { kind: 'response', status: 200, retryAfter: null, bodySnippet: '', durationMs: 0 };
  },
  async close() {},
});

/** The sender a howk process delivers with: worker.dry_run logs instead of sending; otherwise HTTP under the delivery settings. */
export const senderFrom = (config: Config, log: Pick<Logger, 'info'>): Sender =>
  config.worker.dry_run
    ? createDryRunSender(log)
    : createHttpSender({
        connectionsPerOrigin: config.delivery.max_conns_per_host,
        snippetBytes: config.delivery.response_snippet_bytes,
        allowedNetworks: config.delivery.allowed_networks,
      });
