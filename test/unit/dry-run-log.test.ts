import { describe, expect, it } from 'vitest';
import { createLogger } from '../../core/ports/logger';
import { resolveDelivery } from '../../core/transformers/secret-templates';
import { createDryRunSender } from '../../workers/node/sender';

// worker.dry_run (howk-worker and howk-dev): the log line of a delivery that would be sent
// names the endpoint and its query parameters, never a value resolved from a ${VAR} secret.

describe('dry-run delivery log', () => {
  it('logs query parameter names only, no user info, no headers', async () => {
    const SECRET = 'k3y-v4lue-9f2c';
    const lines: string[] = [];
    const sender = createDryRunSender(createLogger('howk-worker', 'info', (l) => lines.push(l)));
    const resolved = resolveDelivery(
      { endpoint: 'https://user:pw@api.partner.test/hook?x=1', delivery_query_params: { api_key: '${PARTNER_KEY}' }, delivery_headers: { authorization: 'Bearer ${PARTNER_KEY}' } },
      new Set(['PARTNER_KEY']),
      () => SECRET,
      { PARTNER_KEY: ['api.partner.test'] },
    );
    if (!resolved.ok) throw new Error(resolved.message);
    expect(resolved.url).toContain(SECRET);
    const r = await sender.send({ url: resolved.url, headers: { ...resolved.headers, 'webhook-id': 'wh_1' }, body: '{"a":1}', timeoutMs: 1000 });
    expect(r).toMatchObject({ kind: 'response', status: 200 });
    expect(lines).toHaveLength(1);
    const line = JSON.parse(lines[0]!);
    expect(line).toMatchObject({ msg: 'DRY: would deliver', webhook_id: 'wh_1', endpoint: 'https://api.partner.test/hook?x=[redacted]&api_key=[redacted]', payload_bytes: 7 });
    expect(lines[0]).not.toContain(SECRET);
    expect(lines[0]).not.toContain('pw@');
  });
});
