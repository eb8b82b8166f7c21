#!/usr/bin/env node
// A receiver for trying the container fleet: answers 200 to every request and logs one line
// per webhook (its id, attempt and body size), so `docker compose logs echo` shows deliveries.
import { createServer } from 'node:http';

const port = Number(process.env.ECHO_PORT || 9000);
const server = createServer((req, res) => {
  let bytes = 0;
  req.on('data', (chunk) => (bytes += chunk.length));
  req.on('end', () => {
    if (req.url !== '/health') {
      console.log(JSON.stringify({ method: req.method, path: req.url, webhook_id: req.headers['webhook-id'], attempt: req.headers['x-webhook-attempt'], bytes }));
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
  });
});
server.listen(port, '0.0.0.0', () => console.log(`echo receiver on :${port}`));
const stop = () => server.close(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
