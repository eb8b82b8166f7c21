import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../core/config/load';
import type { EnqueueItem } from '../../core/domain/enqueue';
import { decodeWebhook, encodeWebhook, WebhookSchema, type Webhook } from '../../core/records/webhook';
import { createEnqueuer, webhookBuilder } from '../../core/pipeline/enqueue';
import { MemoryHotState } from '../../core/memory/hot-state';
import { silentLogger } from '../../core/ports/logger';
import type { LogRecord } from '../../core/ports/log';
import { createSecretBox } from '../../core/signing/secret-box';

// The enqueuer writes a new webhook's record with the one webhook encoder
// (core/records/webhook.ts): it must decode back to that webhook, whatever optional fields it has.

const config = loadConfig({ env: {} });
const at = Date.UTC(2026, 0, 2, 3, 4, 5);

const variants: EnqueueItem[] = [
  { endpoint: 'https://a.example/h', payload: '{"a": 1.0}', headers: {} },
  { endpoint: 'https://a.example/h', payload: '[1,2]', headers: {}, idempotency_key: 'k "quoted" \\ é \u2028', max_attempts: 3 },
  { endpoint: 'https://b.example/p?q="x"&c=Zürich', payload: '"s"', headers: { 'x-a': 'b "c"', 'x-b': 'é' } },
  { endpoint: 'https://a.example/h', payload: 'null', headers: {}, signing_secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' },
  { endpoint: 'https://a.example/h', payload: '7', headers: {}, delivery_headers: { Authorization: 'Bearer ${TOKEN}' }, delivery_query_params: { key: '${K}' } },
];

describe('the webhook record of a new webhook', () => {
  it('decodes back to each new webhook, with or without its optional fields, a trace and a waiting listener', async () => {
    const box = await createSecretBox('k1', { k1: Buffer.alloc(32, 7).toString('base64') });
    const build = webhookBuilder(config, box);
    const hooks: Webhook[] = [];
    for (const [i, item] of variants.entries()) hooks.push(await build('cfg-1', item, at + (i > 2 ? 1 : 0)));
    const extra = await build('other "cfg"', variants[1]!, at);
    hooks.push({ ...extra, trace: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01', awaited_by: 'api-1 "x"' });
    hooks.push({ ...hooks[0]!, awaited_by: 'api-2' });
    for (const w of hooks) expect(decodeWebhook(encodeWebhook(w))).toEqual(WebhookSchema.parse(w));
  });

  it('writes every field of the schema, the payload last and raw', () => {
    const all: Webhook = {
      ...WebhookSchema.parse({
        id: 'wh_1',
        config_id: 'c',
        endpoint: 'https://a.example/',
        endpoint_hash: 'h',
        payload: '{"a": 1.0}',
        attempt: 1,
        max_attempts: 3,
        created_at: 't0',
        scheduled_at: 't1',
      }),
      headers: { a: 'b' },
      body_base64: 'AA==',
      content_type: 'application/x',
      idempotency_key: 'k',
      signing_secret: 'enc:v1:x',
      script_hash: 's',
      replay_of: 'wh_0',
      released_by: ['d1'],
      awaited_by: 'api',
      delivery_headers: { A: '${X}' },
      delivery_query_params: { q: '${Y}' },
      trace: 't',
    };
    const text = encodeWebhook(all);
    expect(Object.keys(JSON.parse(text)).sort()).toEqual(Object.keys(WebhookSchema.shape).sort());
    expect(text.endsWith(',"payload":{"a": 1.0}}')).toBe(true);
    expect(decodeWebhook(text)).toEqual(all);
  });
});

describe('the enqueuer', () => {
  it('produces records that decode to the items, with the listener a waiting request names', async () => {
    const sent: LogRecord[] = [];
    const hot = new MemoryHotState({ status_ttl: 60_000, stats_ttl: 60_000, retry_data_ttl: 60_000 }, { now: () => at });
    const enqueue = createEnqueuer({
      config,
      clock: { now: () => at },
      log: silentLogger,
      hot,
      secretBox: await createSecretBox('k1', { k1: Buffer.alloc(32, 7).toString('base64') }),
      producer: { send: async (rs) => void sent.push(...rs), close: async () => {} },
    });
    // Twice: the second request finds every endpoint hash known (the path without a promise per item).
    for (let round = 0; round < 2; round++) {
      sent.length = 0;
      const items = variants.map((v) => ({ ...v, idempotency_key: v.idempotency_key && `${v.idempotency_key}-${round}` }));
      const results = await enqueue('cfg-1', items, { awaitedBy: 'api-7' });
      expect(results.map((r) => r.status)).toEqual(items.map(() => 'pending'));
      const got = sent.map((r) => decodeWebhook(r.value!));
      expect(sent.map((r) => [r.topic, r.key, r.headers])).toEqual(items.map(() => [config.kafka.topics.pending, 'cfg-1', undefined]));
      expect(got.map((w) => w.id)).toEqual(results.map((r) => r.webhook_id));
      expect(got.map((w) => [w.endpoint, w.payload, w.headers, w.idempotency_key, w.max_attempts, w.awaited_by, w.created_at])).toEqual(
        items.map((it) => [it.endpoint, it.payload, it.headers, it.idempotency_key, it.max_attempts ?? config.retry.max_attempts, 'api-7', new Date(at).toISOString()]),
      );
      expect(got.map((w) => w.delivery_headers)).toEqual(items.map((it) => it.delivery_headers));
      expect(got[3]!.signing_secret).toMatch(/\S/);
      expect(got[3]!.signing_secret).not.toContain('whsec_');
    }
  });
});
