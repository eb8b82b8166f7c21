import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeWebhook } from '../../core/records/webhook';
import { uniq, waitFor } from '../helpers/env';
import { freePort, spawnRole, stopProc, type Proc } from '../helpers/procs';
import { startReceiver, type Receiver } from '../helpers/receiver';
import { collect, configOf, edgeVars, ensureTopics, fleetEnv, startBridge, startEdge, useFleetRedisDb, type Bridge, type Edge } from './helpers/stack';

type Answer = { status: number; body: { webhook_id?: string; status?: string; error?: { code: string; message: string } } };

// One idempotency for every door: the edge (through any host's DomainGate) and howk-api claim
// keys in the same Redis, so one key makes one webhook wherever it is sent, and a key reused
// for another request is refused (409) at either door.
describe('idempotency shared by the edge and howk-api', () => {
  const env = fleetEnv();
  useFleetRedisDb(env);
  const topics = configOf(env).kafka.topics;
  let bridge: Bridge;
  let api: Proc;
  let apiUrl: string;
  let worker: Proc;
  let edge: Edge;
  let rx: Receiver;
  let records: Awaited<ReturnType<typeof collect>>;

  beforeAll(async () => {
    await ensureTopics(env);
    rx = await startReceiver();
    bridge = await startBridge(env);
    const port = await freePort();
    apiUrl = `http://127.0.0.1:${port}`;
    api = spawnRole('api', { ...env, HOWK_API_PORT: String(port), HOWK_API_HOST: '127.0.0.1' });
    worker = spawnRole('worker', env);
    edge = await startEdge(edgeVars(env, bridge.url));
    await waitFor(async () => (await fetch(`${apiUrl}/health`).catch(() => undefined))?.ok, { timeoutMs: 60_000, what: `howk-api up\n${api.output()}` });
    records = await collect(env, [topics.pending, topics.slow]);
  });
  afterAll(async () => {
    await records?.stop();
    await edge?.stop();
    await Promise.all([api && stopProc(api), worker && stopProc(worker), bridge?.stop()]);
    await rx?.close();
  });

  const post = async (base: string, body: unknown, path = '/webhooks/tenant-idem/enqueue'): Promise<Answer> => {
    const res = await fetch(base + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    return { status: res.status, body: (await res.json()) as Answer['body'] };
  };
  const onTopics = (needle: string) => [...records.of(topics.pending), ...records.of(topics.slow)].filter((r) => r.value?.includes(needle)).map((r) => decodeWebhook(r.value!).id);

  it('makes one webhook, delivered once, of one key sent to howk-api, to the edge and through another host', async () => {
    const key = uniq('doors');
    const body = { endpoint: rx.url(`/idem/${key}`), payload: { key }, idempotency_key: key };
    const first = await post(apiUrl, body);
    expect(first.status).toBe(202);
    // The edge, whose gate for 127.0.0.1 never saw the key, answers howk-api's webhook.
    expect(await post(edge.url, body)).toEqual({ status: 200, body: { webhook_id: first.body.webhook_id, status: 'duplicate' } });
    // The other way round, and concurrently: a new key first at the edge.
    const key2 = uniq('doors-edge');
    const body2 = { endpoint: rx.url(`/idem/${key2}`), payload: { key2 }, idempotency_key: key2 };
    const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => post(i % 2 ? apiUrl : edge.url, body2)));
    const ids = new Set(answers.map((a) => a.body.webhook_id));
    expect(ids.size).toBe(1);
    expect(answers.filter((a) => a.status === 202)).toHaveLength(1);
    await waitFor(() => rx.received.some((r) => r.path === `/idem/${key}`) && rx.received.some((r) => r.path === `/idem/${key2}`), {
      timeoutMs: 60_000,
      what: `both deliveries\n${worker.output()}`,
    });
    await new Promise((r) => setTimeout(r, 500));
    expect(rx.received.filter((r) => r.path === `/idem/${key}`)).toHaveLength(1);
    expect(rx.received.filter((r) => r.path === `/idem/${key2}`)).toHaveLength(1);
    expect(onTopics(key)).toEqual([first.body.webhook_id]);
    expect(onTopics(key2)).toEqual([...ids]);
  });

  it('refuses a key reused for another request at the edge with 409, whichever door took it first; nothing enqueued', async () => {
    const key = uniq('clash');
    const body = { endpoint: rx.url(`/idem/${key}`), payload: { key, n: 1 }, idempotency_key: key };
    const first = await post(apiUrl, body);
    expect(first.status).toBe(202);
    // Another body at the edge; another host (its own gate) at the edge; another body at howk-api.
    for (const [base, other] of [
      [edge.url, { ...body, payload: { key, n: 2 } }],
      [edge.url, { ...body, endpoint: rx.url(`/idem/${key}`).replace('127.0.0.1', 'localhost') }],
      [apiUrl, { ...body, payload: { key, n: 3 } }],
    ] as const) {
      const r = await post(base, other);
      expect(r.status).toBe(409);
      expect(r.body.error?.code).toBe('idempotency_key_conflict');
      expect(r.body.error?.message).toContain(first.body.webhook_id);
    }
    await waitFor(() => rx.received.some((r) => r.path === `/idem/${key}`), { timeoutMs: 60_000, what: 'the delivery' });
    await new Promise((r) => setTimeout(r, 500));
    expect(onTopics(key)).toEqual([first.body.webhook_id]);
    expect(rx.received.filter((r) => r.path === `/idem/${key}`).map((r) => JSON.parse(r.body.toString()))).toEqual([{ key, n: 1 }]);
  });

  it('refuses ?wait= at the edge with 400 naming the parameter; nothing enqueued', async () => {
    const tag = uniq('wait');
    const res = await post(edge.url, { endpoint: rx.url(`/idem/${tag}`), payload: { tag } }, '/webhooks/tenant-idem/enqueue?wait=5s');
    expect(res.status).toBe(400);
    expect(res.body.error?.code).toBe('invalid_request');
    expect(res.body.error?.message).toMatch(/^wait is not supported/);
    const batch = await post(edge.url, { webhooks: [{ endpoint: rx.url(`/idem/${tag}`), payload: { tag } }] }, '/webhooks/tenant-idem/enqueue/batch?wait=1');
    expect(batch.status).toBe(400);
    await new Promise((r) => setTimeout(r, 500));
    expect(onTopics(tag)).toEqual([]);
  });
});
