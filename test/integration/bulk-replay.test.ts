import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uniq, waitFor } from '../helpers/env';
import { startTestFleet, type TestFleet } from '../helpers/fleet';
import { startReceiver, type Receiver } from '../helpers/receiver';

// The operators' API on real Kafka + Redis, auth on: bulk replay jobs (progress, stop, never
// twice the same dead letter), GET /endpoints, GET /scripts, GET /keys/me, and a key bound to
// config A that tries to reach config B's dead letters.

type Job = { job_id: string; state: string; total: number | null; replayed: number; skipped: number; not_found: number; replays: { original: string; webhook_id: string }[] };

describe('bulk replay and the operators routes (Kafka + Redis, auth on)', () => {
  let f: TestFleet;
  let rx: Receiver;
  let admin: string;
  let boundA: string;
  const A = uniq('tenantA');
  const B = uniq('tenantB');
  const call = async (method: string, path: string, key: string, body?: unknown) => {
    const r = await fetch(`${f.baseUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    return { status: r.status, body: (await r.json()) as any };
  };
  /** `n` dead letters of `config` (the receiver answers 400: dead at the first attempt); their ids. */
  const deadLetters = async (config: string, n: number): Promise<string[]> => {
    const webhooks = Array.from({ length: n }, (_, i) => ({ endpoint: rx.url(`/reject/${config}`), payload: { i } }));
    expect((await call('POST', `/webhooks/${config}/enqueue/batch`, admin, { webhooks })).status).toBe(202);
    let ids: string[] = [];
    await waitFor(
      async () => {
        ids = (await call('GET', `/deadletter?config_id=${config}&limit=500`, admin)).body.items.map((d: { webhook_id: string }) => d.webhook_id);
        return ids.length >= n;
      },
      { what: `${n} dead letters of ${config}`, timeoutMs: 60_000 },
    );
    return ids;
  };
  const replaysOf = async (config: string) =>
    ((await call('GET', `/webhooks?config_id=${config}&limit=500`, admin)).body.items as { replay_of?: string }[]).filter((w) => w.replay_of).map((w) => w.replay_of!);
  const finished = async (id: string): Promise<Job> => {
    let job: Job | undefined;
    await waitFor(async () => (job = (await call('GET', `/deadletter/replay/${id}`, admin)).body as Job).state !== 'running', { what: `job ${id} to end`, timeoutMs: 60_000 });
    return job!;
  };

  beforeAll(async () => {
    rx = await startReceiver((r) => (r.path.startsWith('/reject') ? { status: 400 } : { status: 200 }));
    f = await startTestFleet('kafka', { overrides: { 'api.auth.enabled': true } });
    await f.fleet.security!.ready;
    admin = (await f.fleet.security!.keys!.create({ scopes: ['admin'] })).key;
    boundA = (await f.fleet.security!.keys!.create({ scopes: ['admin'], config_ids: [A] })).key;
    await waitFor(async () => (await call('GET', '/keys/me', boundA)).status === 200, { what: 'the keys loaded' });
  });
  afterAll(async () => {
    await f?.stop();
    await rx?.close();
  });

  it('replays every dead letter of the config once, reports progress, and leaves the replays that die again alone', async () => {
    const ids = await deadLetters(A, 30);
    const start = await call('POST', `/deadletter/replay?config_id=${A}`, admin, { rate: 200, batch_size: 7 });
    expect(start.status).toBe(202);
    expect(start.body.state).toBe('running');
    const job = await finished(start.body.job_id);
    expect([job.state, job.replayed, job.total, job.skipped]).toEqual(['done', 30, 30, 0]);
    const originals = await replaysOf(A);
    expect(originals.sort()).toEqual([...ids].sort());
    // Each link in the job is what the new webhook records.
    const link = job.replays[0]!;
    expect((await call('GET', `/webhooks/${link.webhook_id}/status`, admin)).body.replay_of).toBe(link.original);
  });

  it('an id list: a dead letter named twice is replayed once', async () => {
    const [x, y] = await deadLetters(B, 2);
    const start = await call('POST', `/deadletter/replay?config_id=${B}`, admin, { ids: [x, x, y, x] });
    const job = await finished(start.body.job_id);
    expect([job.state, job.replayed, job.skipped, job.total]).toEqual(['done', 2, 2, 4]);
    expect((await replaysOf(B)).sort()).toEqual([x, y].sort());
  });

  it('stops: fewer replays than dead letters, and no more after the stop', async () => {
    const config = uniq('slow');
    await deadLetters(config, 40);
    const start = await call('POST', `/deadletter/replay?config_id=${config}`, admin, { rate: 5, batch_size: 10 });
    await waitFor(async () => (await call('GET', `/deadletter/replay/${start.body.job_id}`, admin)).body.replayed >= 2, { what: 'two replays' });
    // The total is known while it runs: the filter's dead letters were read first.
    expect((await call('GET', `/deadletter/replay/${start.body.job_id}`, admin)).body.total).toBe(40);
    const stop = await call('POST', `/deadletter/replay/${start.body.job_id}/stop`, admin);
    expect(stop.status).toBe(200);
    const job = await finished(start.body.job_id);
    expect(job.state).toBe('stopped');
    expect(job.replayed).toBeLessThan(40);
    await new Promise((r) => setTimeout(r, 1000));
    const later = (await call('GET', `/deadletter/replay/${start.body.job_id}`, admin)).body as Job;
    expect(later.replayed).toBe(job.replayed);
    expect((await replaysOf(config)).length).toBe(job.replayed);
    expect((await call('DELETE', `/deadletter/replay/${start.body.job_id}`, admin)).body.state).toBe('stopped');
  });

  it('refuses bad input with the field named, and starts nothing', async () => {
    const bad = await call('POST', `/deadletter/replay?config_id=${A}`, admin, { rate: 0 });
    expect([bad.status, bad.body.error.field]).toEqual([400, 'rate']);
    const both = await call('POST', `/deadletter/replay?config_id=${A}`, admin, { ids: ['wh_x'], reason_type: 'exhausted' });
    expect([both.status, both.body.error.field]).toEqual([400, 'ids']);
    const noConfig = await call('POST', '/deadletter/replay', admin, {});
    expect([noConfig.status, noConfig.body.error.field]).toEqual([400, 'config_id']);
    expect((await call('GET', '/deadletter/replay/rj_nope', admin)).status).toBe(404);
  });

  it('a key bound to config A cannot list, replay or bulk-replay B’s dead letters, nor follow or stop B’s jobs', async () => {
    const [bDead] = await deadLetters(B, 1).then(async () => (await call('GET', `/deadletter?config_id=${B}`, admin)).body.items.map((d: { webhook_id: string }) => d.webhook_id));
    const before = (await replaysOf(B)).length;
    expect((await call('GET', `/deadletter?config_id=${B}`, boundA)).status).toBe(403);
    expect((await call('POST', `/deadletter/${bDead}/replay`, boundA)).status).toBe(404);
    expect((await call('POST', `/deadletter/replay?config_id=${B}`, boundA, {})).status).toBe(403);
    // B's id smuggled into a job of A: not found, nothing replayed.
    const smuggled = await call('POST', `/deadletter/replay?config_id=${A}`, boundA, { ids: [bDead] });
    expect(smuggled.status).toBe(202);
    const job = await finished(smuggled.body.job_id);
    expect([job.replayed, job.not_found]).toEqual([0, 1]);
    const bJob = await call('POST', `/deadletter/replay?config_id=${B}`, admin, { rate: 1 });
    expect((await call('GET', `/deadletter/replay/${bJob.body.job_id}`, boundA)).status).toBe(404);
    expect((await call('POST', `/deadletter/replay/${bJob.body.job_id}/stop`, boundA)).status).toBe(404);
    expect((await call('POST', `/deadletter/replay/${bJob.body.job_id}/stop`, admin)).status).toBe(200);
    await finished(bJob.body.job_id);
    // Only the admin's own job (stopped after at most a replay or two) touched B.
    expect((await replaysOf(B)).length - before).toBe((await call('GET', `/deadletter/replay/${bJob.body.job_id}`, admin)).body.replayed);
    expect((await call('GET', `/endpoints?config_id=${B}`, boundA)).status).toBe(403);
    expect((await call('GET', '/scripts', boundA)).status).toBe(403);
    expect((await call('GET', '/keys/me', boundA)).body.key.config_ids).toEqual([A]);
  });

  it('GET /endpoints lists the endpoints of a config with their live state', async () => {
    const r = await call('GET', `/endpoints?config_id=${A}`, admin);
    expect(r.status).toBe(200);
    expect(r.body.items).toHaveLength(1);
    const e = r.body.items[0];
    expect(e.endpoint).toBe(rx.url(`/reject/${A}`));
    expect(e.webhooks).toBe(60);
    expect(e.circuit.state).toBe('CLOSED');
    expect(e.paused).toBe(false);
    expect(e.last_errors.length).toBeGreaterThan(0);
    expect(typeof e.concurrency.limit).toBe('number');
    expect((await call('POST', `/endpoints/${e.endpoint_hash}/pause`, admin)).status).toBe(200);
    expect((await call('GET', `/endpoints?config_id=${A}`, boundA)).body.items[0].paused).toBe(true);
    expect((await call('GET', '/endpoints', admin)).body.error.field).toBe('config_id');
  });
});
