import bcrypt from 'bcryptjs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basic } from '../helpers/basic-auth';
import { startTestFleet, type TestFleet } from '../helpers/fleet';
import { startReceiver, type Receiver } from '../helpers/receiver';

// Wrong passwords against a bcrypt-protected /incoming/:name, on real Kafka + Redis (a db of its own):
// past the per-client limit they get 429 with Retry-After before any bcrypt work, at most
// a few bcrypt checks run at once, and /health keeps answering meanwhile.

const HEALTH_DEADLINE_MS = 10_000;

describe('/incoming brute force (kafka)', () => {
  let f: TestFleet;
  let rx: Receiver;
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'howk-brute-'));
    await writeFile(join(dir, 'vault.lua'), "assert(howk.post(request.payload.base .. '/vault', { n = 1 }))");
    await writeFile(join(dir, 'vault.passwd'), `alice:${bcrypt.hashSync('correct horse', 10)}\n`);
    rx = await startReceiver();
    f = await startTestFleet('kafka', {
      overrides: { 'transformer.script_dirs': [dir], 'transformer.auth_failure_rate': 0.5, 'transformer.auth_failure_burst': 10, 'transformer.max_concurrent_auth_checks': 4 },
    });
  });
  afterAll(async () => {
    await f?.stop();
    await rx?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('30 wrong passwords at once from one client: the rest of the burst is refused with 429 and Retry-After, /health answers meanwhile', async () => {
    const base = rx.url('').replace(/\/$/, '');
    const flood = Array.from({ length: 30 }, (_, i) =>
      // Spoofed X-Forwarded-For values do not make new clients (the header is not trusted by default).
      f.post('/incoming/vault', { base }, { ...basic('alice', `guess-${i}`), 'x-forwarded-for': `203.0.113.${i}` }),
    );
    const t0 = Date.now();
    const health = fetch(`${f.baseUrl}/health`, { signal: AbortSignal.timeout(HEALTH_DEADLINE_MS) }).then((r) => ({ status: r.status, ms: Date.now() - t0 }));
    const responses = await Promise.all(flood);
    const floodMs = Date.now() - t0;
    const h = await health;
    console.log(`brute force: /health answered in ${h.ms} ms during 30 wrong passwords (all answered in ${floodMs} ms)`);
    expect(h.status).toBe(200);
    const statuses = responses.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toEqual([]);
    // The burst (10, plus what refills meanwhile) may be checked, never more; the rest are 429.
    expect(statuses.filter((s) => s === 401 || s === 503).length).toBeLessThanOrEqual(12);
    const limited = responses.filter((r) => r.status === 429);
    expect(limited.length).toBeGreaterThanOrEqual(18);
    for (const r of limited) {
      expect(Number(r.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(((await r.json()) as any).error).toMatchObject({ code: 'rate_limited', message: expect.stringMatching(/too many failed credentials/) });
    }
    expect(rx.received).toHaveLength(0);
    // Still limited right after (not even the right password is checked), and it comes back after Retry-After.
    const again = await f.post('/incoming/vault', { base }, basic('alice', 'correct horse'));
    expect(again.status).toBe(429);
    const wait = Number(again.headers.get('retry-after'));
    await new Promise((r) => setTimeout(r, wait * 1000 + 200));
    const ok = await f.post('/incoming/vault', { base }, basic('alice', 'correct horse'));
    expect(ok.status).toBe(200);
  }, 60_000);
});
