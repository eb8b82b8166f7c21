import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { NodeMetrics } from './metrics';

/** GET /metrics on its own port (metrics.port) for the processes without an HTTP API: howk-worker, howk-scheduler, howk-reconciler. */
export const serveMetrics = async (metrics: NodeMetrics, port: number, host: string): Promise<{ url: string; close: () => Promise<void> }> => {
  const server: Server = createServer((req, res) => {
    req.resume();
    if (req.method !== 'GET' || (req.url ?? '').split('?')[0] !== '/metrics') {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"code":"not_found","message":"only GET /metrics is served here"}}');
      return;
    }
    metrics.exposition().then(
      ({ contentType, body }) => res.writeHead(200, { 'content-type': contentType }).end(body),
      (e) => res.writeHead(500, { 'content-type': 'text/plain' }).end(`metrics failed: ${String(e)}`),
    );
  });
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const addr = server.address() as AddressInfo;
  return {
    url: `http://${addr.family === 'IPv6' ? `[${addr.address}]` : addr.address}:${addr.port}/metrics`,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
};
