import { describe, expect, it } from 'vitest';
import { apiKeyKey, decodeApiKey, encodeApiKey, type ApiKeyRecord } from '../../core/records/api-key';
import { configSecretKey, decodeConfigSecret, encodeConfigSecret } from '../../core/records/config-secret';
import { deadLetterWebhook, encodeDeadLetter, readDeadLetter } from '../../core/records/dead-letter';
import { decodeGuard, pauseRecord, circuitRecord, resumeRecord } from '../../core/records/guard';
import { decodeMessage, encodeMessage, messageKeyOf, type MessageRecord } from '../../core/records/message';
import { decodeResult, encodeResult } from '../../core/records/result';
import { decodeScript, encodeScript, scriptKey } from '../../core/records/script';
import { parseSnapshot, snapshotValue, stateKey, stateTombstone } from '../../core/records/state';
import { decodeWebhook, encodeWebhook, webhookKey } from '../../core/records/webhook';
import { hook } from '../helpers/reconcile-fixtures';

// One module per topic (core/records/): what it writes, it reads back, under the key it names;
// under another key, a keyed topic's record is not read (it cannot overwrite another object).

const w = hook('wh_1', { attempt: 2, payload: '{"a": 1.0}' });

describe('the record module of each topic', () => {
  it('howk.pending / howk.slow: the webhook, keyed by its config, payload bytes kept', () => {
    expect(webhookKey(w)).toBe(w.config_id);
    expect(decodeWebhook(encodeWebhook(w))).toEqual(w);
  });

  it('howk.results: one result per attempt, keyed by webhook', () => {
    const r = decodeResult(encodeResult(w, 'retry', false, 503, 'HTTP 503', 12, '2026-01-01T00:00:01.000Z', '2026-01-01T00:00:00.000Z'));
    expect(r).toMatchObject({ webhook_id: 'wh_1', attempt: 3, outcome: 'retry', status_code: 503, duration_ms: 12 });
  });

  it('howk.deadletter: the head, and the webhook spliced in raw', () => {
    const head = {
      webhook_id: w.id,
      config_id: w.config_id,
      reason: 'r',
      reason_type: 'exhausted' as const,
      last_status_code: 500,
      last_error: 'HTTP 500',
      last_response: null,
      dead_at: 'x',
    };
    const text = encodeDeadLetter(head, encodeWebhook(w));
    expect(readDeadLetter(text)).toMatchObject({ webhook_id: 'wh_1', reason_type: 'exhausted' });
    expect(deadLetterWebhook(text).payload).toBe('{"a": 1.0}');
  });

  it('howk.state: a snapshot whose state follows the hold, and the tombstone that ends it', () => {
    expect(stateKey(w)).toBe('wh_1');
    expect(parseSnapshot(snapshotValue(w, { updated_at_ns: '1', held: 'paused' }, 0))).toMatchObject({ webhookId: 'wh_1', kind: 'paused', progress: 2 });
    expect(parseSnapshot(snapshotValue(w, { updated_at_ns: '1', held: 'circuit_open' }, 0)).kind).toBe('parked');
    expect(parseSnapshot(snapshotValue(w, { updated_at_ns: '1' }, 0)).kind).toBe('retrying');
    expect(stateTombstone('wh_1')).toEqual({ key: 'wh_1', value: null });
  });

  it('howk.scripts, howk.config-secrets, howk.keys: read back under their own key only', () => {
    const s = { config_id: 'c1', code: 'return 1', sha256: 'ab', updated_at: 'x' };
    expect(decodeScript(scriptKey(s), encodeScript(s))).toEqual(s);
    expect(decodeScript('c2', encodeScript(s))).toBeUndefined();
    const c = { config_id: 'c1', secrets: [], updated_at: 'x' };
    expect(decodeConfigSecret(configSecretKey(c), encodeConfigSecret(c))).toEqual(c);
    expect(decodeConfigSecret('c2', encodeConfigSecret(c))).toBeUndefined();
    const k: ApiKeyRecord = { id: '0123456789abcdef', name: '', hash: 'a'.repeat(64), scopes: ['read'], config_ids: null, created_at: 'x', revoked_at: null };
    expect(decodeApiKey(apiKeyKey(k), encodeApiKey(k))).toEqual(k);
    expect(decodeApiKey('fedcba9876543210', encodeApiKey(k))).toBeUndefined();
  });

  it('howk.guards: a pause and an open circuit read back; a resume and a closed circuit are tombstones', () => {
    const p = pauseRecord({ kind: 'endpoint', id: 'h1' }, 0);
    expect(decodeGuard(p.key, p.value!)).toEqual({ kind: 'endpoint', id: 'h1' });
    const c = circuitRecord({ endpointHash: 'h1', state: 'OPEN', openUntil: 5, openedCount: 2, at: 1 });
    expect(decodeGuard(c.key, c.value!)).toEqual({ endpointHash: 'h1', openUntil: 5, openedCount: 2, at: 1 });
    // Under a key that is not its own, a record is not read: it names another scope.
    expect(decodeGuard('pause:endpoint:h2', p.value!)).toBeUndefined();
    expect(decodeGuard('circuit:h2', c.value!)).toBeUndefined();
    expect(resumeRecord({ kind: 'endpoint', id: 'h1' }).value).toBeNull();
    expect(circuitRecord({ endpointHash: 'h1', state: 'CLOSED', openUntil: 0, openedCount: 0, at: 1 }).value).toBeNull();
  });

  it('howk.messages: read back under its own key only', () => {
    const m: MessageRecord = { kind: 'message', id: 'msg_1', app_id: 'app_1', event_type: 'e', event_id: null, channels: null, payload: '{}', timestamp: 'x', deliveries: [] };
    expect(decodeMessage(messageKeyOf(m), encodeMessage(m))).toEqual(m);
    expect(decodeMessage('msg/app_2/msg_1', encodeMessage(m))).toBeUndefined();
  });
});
