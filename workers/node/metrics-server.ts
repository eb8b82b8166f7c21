import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { DependencyCheck } from '../../core/http/deps';
import type { NodeMetrics } from './metrics';

const json = (res: ServerResponse, status: number, body: unknown) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));

// Container and Kubernetes probes of the processes without an HTTP API: /health is liveness
// (the event loop answers), /ready asks Kafka and Redis like howk-api's /ready.
const probe = async (path: string, res: ServerResponse, dependencies: readonly DependencyCheck[]): Promise<boolean> => {
  if (path === '/health') {
    json(res, 200, { status: 'ok' });
    return true;
  }
  if (path !== '/ready') return false;
  const checks = await Promise.all(
    dependencies.map((d) =>
      d.check().then(
        () => ({ name: d.name, ok: true }),
        (e: unknown) => ({ name: d.name, ok: false, error: String(e) }),
      ),
    ),
  );
  const ok = checks.every((c) => c.ok);
  json(res, ok ? 200 : 503, { status: ok ? 'ready' : 'not_ready', dependencies: checks });
  return true;
};

/**
 * GET /metrics, /health and /ready on their own port (metrics.port) for the processes without
 * an HTTP API: howk-worker, howk-scheduler and howk-reconciler --watch.
 */
export const serveMetrics = async (
  metrics: NodeMetrics,
  port: number,
  host: string,
  dependencies: readonly DependencyCheck[] = [],
): Promise<{ url: string; close: () => Promise<void> }> => {
  const server: Server = createServer(async (req, res) => {
    req.resume();
    const path = (req.url ?? '').split('?')[0];
    if (req.method === 'GET' && path !== '/metrics' && (await probe(path ?? '', res, dependencies))) return;
    if (req.method !== 'GET' || path !== '/metrics') {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"code":"not_found","message":"only GET /metrics, /health and /ready are served here"}}');
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
