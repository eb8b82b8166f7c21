import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../core/config/load';
import { createLogger } from '../../core/ports/logger';
import type { Sender } from '../../core/ports/sender';
import { senderFrom } from '../../workers/node/sender';
import { startReceiver, type Receiver } from '../helpers/receiver';

// The sender howk-dev and the production roles deliver with, as their config makes it.

describe('senderFrom', () => {
  let rx: Receiver | undefined;
  let sender: Sender | undefined;
  afterEach(async () => {
    await sender?.close();
    await rx?.close();
  });
  const req = (url: string) => ({ url, headers: { 'webhook-id': 'wh_1', 'content-type': 'application/json' }, body: '{"a":1}', timeoutMs: 3000 });

  it('worker.dry_run: logs the delivery and answers 200 without sending it', async () => {
    rx = await startReceiver();
    const lines: string[] = [];
    sender = senderFrom(
      loadConfig({ overrides: { 'worker.dry_run': true, 'delivery.allowed_networks': ['127.0.0.0/8'] } }),
      createLogger('howk-worker', 'info', (l) => lines.push(l)),
    );
    const r = await sender.send(req(rx.url()));
    expect(r).toMatchObject({ kind: 'response', status: 200 });
    expect(rx.received).toHaveLength(0);
    expect(lines.map((l) => JSON.parse(l) as { msg: string })).toMatchObject([{ msg: 'DRY: would deliver', webhook_id: 'wh_1' }]);
  });

  it('otherwise sends over HTTP, to the networks delivery.allowed_networks opens and no other non-public one', async () => {
    rx = await startReceiver(() => ({ status: 202 }));
    const lines: string[] = [];
    const log = createLogger('howk-worker', 'info', (l) => lines.push(l));
    sender = senderFrom(loadConfig({ overrides: { 'delivery.allowed_networks': ['127.0.0.0/8'] } }), log);
    expect(await sender.send(req(rx.url()))).toMatchObject({ kind: 'response', status: 202 });
    expect(rx.received.map((r) => r.path)).toEqual(['/hook']);
    await sender.close();
    sender = senderFrom(loadConfig({ overrides: { 'delivery.allowed_networks': [] } }), log);
    expect(await sender.send(req(rx.url('/again')))).toMatchObject({ kind: 'blocked' });
    expect(rx.received).toHaveLength(1);
    expect(lines).toEqual([]);
  });
});
