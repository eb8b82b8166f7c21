import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { edgeVars, ensureTopics, fleetEnv, startBridge, startEdge, useFleetRedisDb, type Bridge, type Edge } from './helpers/stack';

// A DomainGate evicted or redeployed keeps what it stored in its SQLite storage: the
// idempotency rows, its bucket level, and the keys of a reservation awaiting its settle.
describe('DomainGate restarted on its persisted storage', () => {
  const env = fleetEnv();
  useFleetRedisDb(env);
  const persist = mkdtempSync(join(tmpdir(), 'howk-edge-gate-'));
  const host = 'restart.gate.test';
  let bridge: Bridge;
  let edge: Edge;

  // 3 at once to the fast lane, then one per 100 s: the rest to the slow lane.
  const vars = () => edgeVars(env, bridge.url, { HOWK_EDGE_DOMAIN_RATES: JSON.stringify({ [host]: { rate: 0.01, burst: 3 } }) });
  const restart = async () => {
    await edge.stop();
    edge = await startEdge(vars(), { persist });
  };
  const enqueue = async (body: Record<string, unknown>) => {
    const res = await edge.post('/webhooks/tenant-restart/enqueue', { endpoint: `http://${host}/hook`, payload: { a: 1 }, ...body });
    return { status: res.status, body: (await res.json()) as { webhook_id: string; status: string } };
  };
  const gate = async (path: string, body: unknown) => {
    const ns = await edge.mf.getDurableObjectNamespace('GATE');
    const res = await ns.get(ns.idFromName(host)).fetch(`https://domain-gate.internal${path}`, { method: 'POST', body: JSON.stringify(body) });
    return (await res.json()) as any;
  };

  beforeAll(async () => {
    await ensureTopics(env);
    bridge = await startBridge(env);
    edge = await startEdge(vars(), { persist });
  });
  afterAll(async () => {
    await edge?.stop();
    await bridge?.stop();
    rmSync(persist, { recursive: true, force: true });
  });

  it('keeps its idempotency rows and its bucket level', async () => {
    const first = await enqueue({ idempotency_key: 'once' });
    expect(first.status).toBe(202);
    for (let i = 0; i < 2; i++) expect((await enqueue({})).status).toBe(202);
    expect((await edge.gateStats(host)).admitted).toMatchObject({ pending: 3, slow: 0 });
    await restart();
    // The same key: the first webhook's id, nothing produced.
    expect(await enqueue({ idempotency_key: 'once' })).toEqual({ status: 200, body: { webhook_id: first.body.webhook_id, status: 'duplicate' } });
    // The bucket is as empty as it was: a fresh gate would have taken this one in the fast lane.
    expect((await enqueue({})).status).toBe(202);
    const stats = await edge.gateStats(host);
    expect(stats.admitted).toMatchObject({ pending: 0, slow: 1 });
    expect(stats.idempotency_keys).toBe(1);
  });

  it('holds the keys of a reservation across a restart, and commits them when its settle comes', async () => {
    const item = { webhook_id: 'wh_reserved_1', endpoint_hash: 'x', idempotency_key: 'multi', value: '{}' };
    const reserved = await gate('/reserve', { config_id: 'tenant-restart', host, items: [item] });
    expect(reserved.results[0].status).toBe('pending');
    await restart();
    // Another request with the key while the reservation is unsettled: retry later.
    expect((await enqueue({ idempotency_key: 'multi' })).status).toBe(503);
    expect(await gate('/settle', { reservation: reserved.reservation, ok: true })).toEqual({ settled: true });
    expect((await enqueue({ idempotency_key: 'multi' })).body).toEqual({ webhook_id: 'wh_reserved_1', status: 'duplicate' });
  });
});
