import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateKey } from '../../core/security/api-keys';
import { startTestFleet, type TestFleet } from '../helpers/fleet';
import { freePort } from '../helpers/procs';
import { postRaw } from '../helpers/receiver';
import { edgeVars, fleetEnv, startEdge, type Edge } from './helpers/stack';

type Case = { name: string; path: string; body: string; headers?: Record<string, string>; /** compare only these parts of the error */ loose?: boolean };
type Reply = { status: number; json: any };

// A request to each; the oversized body goes through node:http (the server answers 413 and
// closes mid-upload), on a fresh connection so that no kept-alive socket is reused.
const send = async (url: string, c: Case): Promise<Reply> => {
  if (c.body.length > 1_000_000) return postRaw(url, c.body, { ...c.headers, connection: 'close' });
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...c.headers }, body: c.body });
  return { status: res.status, json: await res.json() };
};

const item = (o: Record<string, unknown> = {}) => ({ endpoint: 'https://example.com/hook', payload: { a: 1 }, ...o });
const j = (v: unknown) => JSON.stringify(v);

// The edge serves howk-api's enqueue routes from core/http: every bad input gets the same
// status and the same JSON error from both, and nothing is produced.
const CASES: Case[] = [
  { name: 'invalid JSON', path: '/webhooks/c1/enqueue', body: '{"endpoint":' },
  { name: 'not an object', path: '/webhooks/c1/enqueue', body: '[1,2]' },
  { name: 'missing endpoint', path: '/webhooks/c1/enqueue', body: j({ payload: {} }) },
  { name: 'endpoint not http(s)', path: '/webhooks/c1/enqueue', body: j(item({ endpoint: 'ftp://example.com/x' })) },
  { name: 'missing payload', path: '/webhooks/c1/enqueue', body: j({ endpoint: 'https://example.com/hook' }) },
  { name: 'transport header', path: '/webhooks/c1/enqueue', body: j(item({ headers: { 'webhook-id': 'x' } })) },
  { name: 'header with CRLF', path: '/webhooks/c1/enqueue', body: j(item({ headers: { 'x-a': 'a\r\nb' } })) },
  { name: 'max_attempts 0', path: '/webhooks/c1/enqueue', body: j(item({ max_attempts: 0 })) },
  { name: 'empty idempotency_key', path: '/webhooks/c1/enqueue', body: j(item({ idempotency_key: '' })) },
  { name: 'bad config id', path: '/webhooks/bad%20id!/enqueue', body: j(item()) },
  { name: 'batch not a list', path: '/webhooks/c1/enqueue/batch', body: j({ webhooks: {} }) },
  { name: 'empty batch', path: '/webhooks/c1/enqueue/batch', body: j({ webhooks: [] }) },
  { name: 'batch over the limit', path: '/webhooks/c1/enqueue/batch', body: j({ webhooks: Array.from({ length: 101 }, () => item()) }) },
  { name: 'batch with bad items', path: '/webhooks/c1/enqueue/batch', body: j({ webhooks: [item(), item(), 'x', item({ endpoint: 'nope' })] }) },
  { name: 'body over max_request_size', path: '/webhooks/c1/enqueue', body: j(item({ payload: 'x'.repeat(1_100_000) })) },
  { name: 'unknown route', path: '/webhooks/c1/enqueue/nope', body: j(item()) },
  // Cloudflare adds headers of its own (cf-*, x-forwarded-*), so the count in the message differs.
  {
    name: 'too many request headers',
    path: '/webhooks/c1/enqueue',
    body: j(item()),
    headers: Object.fromEntries(Array.from({ length: 120 }, (_, i) => [`x-h${i}`, 'v'])),
    loose: true,
  },
];

describe('bad input at the edge gets the same 4xx as howk-api', () => {
  let api: TestFleet;
  let edge: Edge;
  let keyed: Edge;
  const keys: Record<string, string> = {};

  beforeAll(async () => {
    api = await startTestFleet('memory', { roles: { api: true, worker: false, scheduler: false } });
    // No bridge listens: a request that got past validation would answer 503, never 4xx.
    const deadBridge = `http://127.0.0.1:${await freePort()}`;
    edge = await startEdge(edgeVars(fleetEnv(), deadBridge, { HOWK_API_AUTH_ENABLED: 'false' }));
    const now = new Date();
    const made = await Promise.all([generateKey({ name: 'enq', scopes: ['enqueue'], config_ids: ['c1'] }, now), generateKey({ name: 'reader', scopes: ['read'] }, now)]);
    keys.enqueue = made[0].token;
    keys.read = made[1].token;
    // Keys from the bootstrap secret alone (no Redis mirror configured).
    const {
      HOWK_EDGE_REDIS_REST_URL: _u,
      HOWK_EDGE_REDIS_REST_TOKEN: _t,
      ...vars
    } = edgeVars(fleetEnv(), deadBridge, {
      HOWK_API_AUTH_ENABLED: 'true',
      HOWK_EDGE_API_KEYS: JSON.stringify(made.map((m) => m.record)),
    });
    keyed = await startEdge(vars);
  });
  afterAll(async () => {
    await Promise.all([edge?.stop(), keyed?.stop(), api?.stop()]);
  });

  for (const c of CASES) {
    it(c.name, async () => {
      const [a, e] = await Promise.all([send(api.baseUrl + c.path, c), send(edge.url + c.path, c)]);
      expect(a.status).toBeGreaterThanOrEqual(400);
      expect(a.status).toBeLessThan(500);
      expect(e.status).toBe(a.status);
      if (c.loose) expect({ code: e.json.error.code, limit: e.json.error.limit }).toEqual({ code: a.json.error.code, limit: a.json.error.limit });
      else expect(e.json).toEqual(a.json);
    });
  }

  it('checks API keys with howk-api’s rules (records from HOWK_EDGE_API_KEYS)', async () => {
    const body = j(item());
    const as = (path: string, token?: string) => send(keyed.url + path, { name: '', path, body, headers: token ? { authorization: `Bearer ${token}` } : {} });
    const none = await as('/webhooks/c1/enqueue');
    expect(none.status).toBe(401);
    expect(none.json.error.code).toBe('unauthorized');
    expect((await as('/webhooks/c1/enqueue', 'howk_0000000000000000_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA')).status).toBe(401);
    expect((await as('/webhooks/c1/enqueue', keys.read)).status).toBe(403);
    expect((await as('/webhooks/c2/enqueue', keys.enqueue)).status).toBe(403);
    // A good key gets through to the enqueuer, which then finds no bridge: 503, not a 4xx.
    expect((await as('/webhooks/c1/enqueue', keys.enqueue)).status).toBe(503);
    expect((await fetch(`${keyed.url}/health`)).status).toBe(200);
  });
});
