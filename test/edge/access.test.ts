import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { edgeConfigFrom } from '../../edge/config';
import { edgeVars, fleetEnv, startEdge, type Edge } from './helpers/stack';

// A bridge behind Cloudflare Access: the edge sends the Access service token (or any header
// edge.bridge_headers names) with every Kafka and Redis REST request.
describe('edge.bridge_headers', () => {
  let server: Server;
  let edge: Edge;
  const seen: { path: string; headers: IncomingHttpHeaders }[] = [];

  beforeAll(async () => {
    // Stands in for the proxy in front of the bridge: records what reaches it.
    server = createServer((req, res) => {
      seen.push({ path: req.url ?? '', headers: req.headers });
      res.setHeader('content-type', 'application/json');
      // Redis commands come as a pipeline (the client's auto-pipelining): one reply per command.
      res.end(req.url?.startsWith('/redis') ? JSON.stringify([{ result: 'PONG' }]) : '{}');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    edge = await startEdge(edgeVars(fleetEnv(), url, { HOWK_EDGE_BRIDGE_HEADERS: JSON.stringify({ 'CF-Access-Client-Id': 'id.access', 'CF-Access-Client-Secret': 's3cret' }) }));
  });
  afterAll(async () => {
    await edge?.stop();
    await new Promise((r) => server?.close(r));
  });

  it('sends them on the Kafka and the Redis route', async () => {
    const res = await fetch(`${edge.url}/health/dependencies`);
    expect(res.status).toBe(200);
    const kafka = seen.find((s) => s.path.startsWith('/kafka'));
    const redis = seen.find((s) => s.path.startsWith('/redis'));
    for (const s of [kafka, redis]) expect(s?.headers).toMatchObject({ 'cf-access-client-id': 'id.access', 'cf-access-client-secret': 's3cret' });
  });

  it('refuses a value that is not a JSON object of strings, naming the setting', () => {
    for (const v of ['["x"]', '{"a":1}', 'not json']) {
      let field: string | undefined;
      try {
        edgeConfigFrom(edgeVars(fleetEnv(), 'http://127.0.0.1:9', { HOWK_EDGE_BRIDGE_HEADERS: v }));
      } catch (e) {
        field = (e as { field?: string }).field;
      }
      expect(field, v).toBe('edge.bridge_headers');
    }
  });
});
