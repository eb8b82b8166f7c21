import { readFileSync } from 'node:fs';
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/env';
import { freePort, spawnRole, stopProc, type Proc } from '../helpers/procs';

// A real howk-dev process on a loopback address, as a developer runs it, attacked the way a
// web page they visit would (a "simple" cross-site POST, DNS rebinding), and with bodies too
// large for a route (the answer must come early, be readable, and cost no memory). No Kafka
// or Redis: --memory.

type Answer = { status: number; json: any };

/** GET/POST with any Host header (fetch does not let a caller set it). */
const raw = (port: number, method: string, path: string, headers: Record<string, string>, body?: string): Promise<Answer> =>
  new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method, headers }, (res) => {
      let text = '';
      res.on('data', (b) => (text += b));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, json: text ? JSON.parse(text) : null }));
    });
    req.on('error', reject);
    req.end(body);
  });

const rssMb = (pid: number): number => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;

/**
 * A chunked body of `total` bytes made on the fly, 64 KiB at a time (a timer between chunks, so
 * that what the client counts as sent is what left it, not what kernel buffers hold), until
 * the answer arrives. Once past `pauseAt` it waits up to 5 s for the answer before sending on:
 * a server that answers at its limit is then measured by what it was sent, not by how late a
 * loaded client noticed the answer (beside other test lanes, 4 more chunks left meanwhile); one
 * that reads on gets the rest. Returns the answer, the bytes sent when it arrived, the server's
 * peak RSS.
 */
const streamUntilAnswer = (port: number, path: string, total: number, pid: number, pauseAt = Infinity) =>
  new Promise<{ status: number; code: string; sentAtAnswer: number; peakRss: number }>((resolve, reject) => {
    const chunk = Buffer.alloc(64 * 1024, 'a');
    let sent = 0;
    let answered = false;
    let peakRss = rssMb(pid);
    const req = request({ host: '127.0.0.1', port, path, method: 'POST', headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked' } }, (res) => {
      answered = true;
      const sentAtAnswer = sent;
      let text = '';
      res.on('data', (b) => (text += b));
      res.on('end', () => {
        req.destroy();
        resolve({ status: res.statusCode ?? 0, code: JSON.parse(text).error?.code, sentAtAnswer, peakRss });
      });
    });
    req.on('error', (e) => (answered ? undefined : reject(e)));
    req.write('{"name":"');
    let paused = false;
    const pump = () => {
      if (answered) return;
      if (sent >= total) return void req.end('"}');
      if (sent >= pauseAt && !paused) {
        paused = true;
        return void setTimeout(pump, 5_000);
      }
      sent += chunk.length;
      peakRss = Math.max(peakRss, rssMb(pid));
      if (req.write(chunk)) setTimeout(pump, 1);
      else req.once('drain', () => setTimeout(pump, 1));
    };
    pump();
  });

/** A Content-Length body over the limit, on a connection the client closes after (Connection: close). */
const oversized = (port: number, body: string) =>
  new Promise<string>((resolve) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path: '/webhooks/big/enqueue',
        method: 'POST',
        agent: false,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(String(res.statusCode)));
      },
    );
    req.on('error', (e: NodeJS.ErrnoException) => resolve(`error ${e.code}`));
    req.end(body);
  });

describe('howk-dev on loopback: browsers, rebinding and request bodies (process)', () => {
  let p: Proc;
  let port: number;
  let base: string;
  beforeAll(async () => {
    port = await freePort();
    base = `http://127.0.0.1:${port}`;
    p = spawnRole('dev', { HOWK_API_PORT: String(port), HOWK_API_HOST: '127.0.0.1' }, ['--memory', '--dry']);
    await waitFor(async () => (await fetch(`${base}/ready`).catch(() => undefined))?.status === 200, { timeoutMs: 60_000, what: `howk-dev ready\n${p.output()}` });
  });
  afterAll(() => stopProc(p));

  const listed = async (config: string) => ((await (await fetch(`${base}/webhooks?config_id=${config}`)).json()) as { items: unknown[] }).items.length;
  const item = JSON.stringify({ endpoint: 'http://127.0.0.1:9/hook', payload: { a: 1 } });

  it('a page that posts text/plain JSON (no preflight) gets a 415, a foreign Origin a 403; nothing is enqueued', async () => {
    const plain = await fetch(`${base}/webhooks/csrf/enqueue`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain;charset=UTF-8', authorization: 'Bearer forged' },
      body: item,
    });
    expect(plain.status).toBe(415);
    const foreign = await fetch(`${base}/webhooks/csrf/enqueue`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' },
      body: item,
    });
    expect(foreign.status).toBe(403);
    expect(((await foreign.json()) as { error: { code: string } }).error.code).toBe('cross_origin_refused');
    expect(await listed('csrf')).toBe(0);
    // The console's own requests (same origin) and curl's (no Origin) pass.
    expect((await fetch(`${base}/webhooks/csrf/enqueue`, { method: 'POST', headers: { 'content-type': 'application/json', origin: base }, body: item })).status).toBe(202);
    expect((await fetch(`${base}/webhooks/csrf/enqueue`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: item })).status).toBe(202);
    expect(await listed('csrf')).toBe(2);
  });

  it('a DNS-rebound name is refused (421) for reads and writes; the loopback names pass', async () => {
    for (const [method, path] of [
      ['GET', '/webhooks?config_id=csrf'],
      ['GET', '/stats'],
      ['POST', '/webhooks/rebind/enqueue'],
    ] as const) {
      const r = await raw(port, method, path, { host: `rebind.attacker.example:${port}`, 'content-type': 'application/json' }, method === 'POST' ? item : undefined);
      expect(r.status, `${method} ${path}`).toBe(421);
      expect(r.json.error.code).toBe('host_not_allowed');
    }
    expect(await listed('rebind')).toBe(0);
    for (const host of [`localhost:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`]) expect((await raw(port, 'GET', '/stats', { host })).status, host).toBe(200);
  });

  it('a 200 MiB chunked admin body is answered 413 after at most 1 MiB sent, and the server holds none of it', async () => {
    const before = rssMb(p.child.pid!);
    // Bulk replay: an admin JSON route howk-dev serves with API keys off (POST /keys refuses
    // before reading while they are off).
    // The body is 9 bytes of JSON and then 64 KiB chunks: past 1 MiB of chunks it is over the limit.
    const r = await streamUntilAnswer(port, '/deadletter/replay?config_id=csrf', 200 * 1024 * 1024, p.child.pid!, 1024 * 1024);
    expect(r.status).toBe(413);
    expect(r.code).toBe('too_large');
    expect(r.sentAtAnswer).toBeLessThanOrEqual(1024 * 1024);
    expect(r.peakRss - before).toBeLessThan(50);
    // The process still answers.
    expect((await fetch(`${base}/health`)).status).toBe(200);
  });

  it('a 5 MiB enqueue reads its 413 every time (50 of 50), on a connection closed after it', async () => {
    const body = JSON.stringify({ endpoint: 'http://127.0.0.1:9/hook', payload: 'x'.repeat(5 * 1024 * 1024) });
    const outcomes: Record<string, number> = {};
    for (let i = 0; i < 50; i++) {
      const o = await oversized(port, body);
      outcomes[o] = (outcomes[o] ?? 0) + 1;
    }
    expect(outcomes).toEqual({ '413': 50 });
    expect(await listed('big')).toBe(0);
  });
});
