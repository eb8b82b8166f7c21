import { serve, type ServerType } from '@hono/node-server';
import type { Config } from '../../core/config/schema';
import { withConsole } from './console';
import { lingerOnEarlyAnswers } from './linger';

/** howk-api's (or howk-dev's) HTTP server: the API app with the console beside it, on api.host:api.port. */
export const listenApi = async (fetch: (req: Request) => Response | Promise<Response>, config: Config, server: 'howk-dev' | 'howk-api'): Promise<ServerType> => {
  const s = await new Promise<ServerType>((resolve) => {
    // Node's own header parser limit sits above api.max_request_header_bytes, so that the
    // JSON 431 of core/http/middleware/limits.ts answers first.
    const serverOptions = { maxHeaderSize: Math.max(16_384, 2 * config.api.max_request_header_bytes + 4096) };
    // The operators' console and the Lab share the API's origin (docs/CONSOLE.md).
    const { base_delay, max_delay, jitter, max_deferrals } = config.retry;
    const withUi = withConsole(fetch, { auth: config.api.auth.enabled, server, retry: { base_delay, max_delay, jitter, max_deferrals } });
    const srv = serve({ fetch: withUi, port: config.api.port, hostname: config.api.host, serverOptions }, () => resolve(srv));
  });
  // Slow clients cannot hold sockets forever: the whole request within read_timeout.
  lingerOnEarlyAnswers(s);
  const http = s as unknown as { requestTimeout: number; headersTimeout: number; timeout: number };
  http.requestTimeout = config.api.read_timeout;
  http.headersTimeout = Math.min(config.api.read_timeout, 60_000);
  http.timeout = config.api.read_timeout + config.api.write_timeout;
  return s;
};
