import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/env';
import { TEST_SECRET } from '../helpers/fleet';
import { freePort, spawnRole, stopProc, type Proc } from '../helpers/procs';
import { startReceiver, type Receiver } from '../helpers/receiver';
import { verifyStandardWebhook } from '../helpers/standard-webhooks';

// howk-dev, the embedded door (its SQLite log, in-memory hot state): a raw body delivered byte
// for byte on its first attempt and on the retry read back from the SQLite file, and an
// idempotency key answered as at the other doors (duplicate, or 409 for another body).
describe('howk-dev: raw bodies and idempotency (process, SQLite)', () => {
  let dir: string;
  let dev: Proc;
  let rx: Receiver;
  let base: string;

  beforeAll(async () => {
    rx = await startReceiver((r) => ({ status: r.headers['x-webhook-attempt'] === '1' ? 500 : 200 }));
    dir = await mkdtemp(join(tmpdir(), 'howk-dev-raw-'));
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    dev = spawnRole(
      'dev',
      {
        HOWK_API_PORT: String(port),
        HOWK_API_HOST: '127.0.0.1',
        HOWK_RETRY_BASE_DELAY: '200ms',
        HOWK_RETRY_JITTER: '0',
        HOWK_SIGNING_DEFAULT_SECRET: TEST_SECRET,
        HOWK_LOG_LEVEL: 'warn',
      },
      ['--data', dir],
    );
    await waitFor(async () => (await fetch(`${base}/ready`).catch(() => undefined))?.status === 200, { timeoutMs: 60_000, what: `howk-dev ready\n${dev.output()}` });
  });
  afterAll(async () => {
    if (dev) await stopProc(dev);
    await rx?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const post = (body: unknown) => fetch(`${base}/webhooks/dev-raw/enqueue`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

  it('delivers a raw body exactly on both attempts, and answers its key as a duplicate or a 409', async () => {
    const bytes = Buffer.concat([Buffer.from('a=1&b=caf'), Buffer.from([0xe9, 0xff]), Buffer.from('\r\n')]);
    const body = { endpoint: `${rx.url('/form')}`, body_base64: bytes.toString('base64'), content_type: 'application/x-www-form-urlencoded', idempotency_key: 'dev-k1' };
    const first = await post(body);
    expect(first.status).toBe(202);
    const { webhook_id: id } = (await first.json()) as { webhook_id: string };
    const again = await post(body);
    expect([again.status, await again.json()]).toEqual([200, { webhook_id: id, status: 'duplicate' }]);
    const other = await post({ ...body, body_base64: Buffer.from('a=2').toString('base64') });
    expect(other.status).toBe(409);
    expect(((await other.json()) as { error: { code: string } }).error.code).toBe('idempotency_key_conflict');
    await waitFor(() => rx.received.filter((r) => r.path === '/form').length >= 2, { what: `both attempts\n${dev.output()}` });
    await new Promise((r) => setTimeout(r, 300));
    const got = rx.received.filter((r) => r.path === '/form');
    expect(got.map((r) => r.headers['x-webhook-attempt'])).toEqual(['1', '2']);
    for (const r of got) {
      expect(r.headers['webhook-id']).toBe(id);
      expect(r.body.equals(bytes)).toBe(true);
      expect(r.headers['content-type']).toBe('application/x-www-form-urlencoded');
      expect(verifyStandardWebhook(TEST_SECRET, r.headers, r.body)).toBe(true);
    }
  });
});
