import { describe, expect, it } from 'vitest';
import { webhookId } from '../../core/domain/ids';
import { ValidationError } from '../../core/errors/errors';
import type { LogProducer, LogRecord } from '../../core/ports/log';
import type { DeadLetterEntry } from '../../core/ports/recovery';
import { deadLetterEntryOf, deadStatusOf, indexingDeadLetters } from '../../core/reconcile/deadletters';
import { deadLetterFloor, deadLetterMember, idFloor, parseDeadLetterListQuery, parseWebhookListQuery, scanPage } from '../../core/reconcile/listing';
import { resendHeaders, retryAttempt } from '../../core/reconcile/redrive';
import { T0, deadLetter, hook } from '../helpers/reconcile-fixtures';

// Listing rules, dead-letter indexing and the retry/replay helpers: pure pieces.

describe('listing rules', () => {
  it('idFloor is the smallest webhook id of its millisecond: older ids sort below it, newer above', () => {
    const old = webhookId(T0 - 1);
    const same = webhookId(T0);
    const newer = webhookId(T0 + 1);
    const floor = idFloor(T0);
    expect(old < floor).toBe(true);
    expect(same >= floor).toBe(true);
    expect(newer > floor).toBe(true);
  });

  it('dead-letter members sort by dead_at, then webhook id', () => {
    expect(deadLetterMember(5, 'wh_b')).toBe('0000000000005:wh_b');
    expect(deadLetterMember(T0, 'wh_a') < deadLetterMember(T0 + 1, 'wh_0')).toBe(true);
    expect(deadLetterFloor(T0) <= deadLetterMember(T0, 'wh_a')).toBe(true);
  });

  it('parses GET /webhooks queries and names the bad field', () => {
    expect(parseWebhookListQuery({ config_id: 'c1', state: 'retrying', limit: '20', cursor: 'wh_01ABC' })).toEqual({
      configId: 'c1',
      state: 'retrying',
      cursor: 'wh_01ABC',
      limit: 20,
    });
    expect(parseWebhookListQuery({ config_id: 'c1' }).limit).toBe(50);
    const field = (q: Record<string, string>) => {
      try {
        parseWebhookListQuery(q);
      } catch (e) {
        return (e as ValidationError).field;
      }
      return null;
    };
    expect(field({})).toBe('config_id');
    expect(field({ config_id: 'bad id' })).toBe('config_id');
    expect(field({ config_id: 'c', state: 'gone' })).toBe('state');
    expect(field({ config_id: 'c', limit: '0' })).toBe('limit');
    expect(field({ config_id: 'c', limit: '501' })).toBe('limit');
    expect(field({ config_id: 'c', cursor: 'x y' })).toBe('cursor');
  });

  it('parses GET /deadletter queries: since as ISO date or unix ms', () => {
    expect(parseDeadLetterListQuery({ config_id: 'c', since: '2026-01-15T12:00:00Z', reason_type: 'exhausted' })).toEqual({
      configId: 'c',
      since: T0,
      reasonType: 'exhausted',
      limit: 50,
    });
    expect(parseDeadLetterListQuery({ config_id: 'c', since: String(T0) }).since).toBe(T0);
    expect(() => parseDeadLetterListQuery({ config_id: 'c', since: 'yesterday' })).toThrow(ValidationError);
    expect(() => parseDeadLetterListQuery({ config_id: 'c', cursor: 'wh_1' })).toThrow(ValidationError);
  });

  it('scanPage: full pages end with a cursor, a sparse filter stops at the scan budget with one', async () => {
    const keys = Array.from({ length: 3000 }, (_, i) => `k${String(i).padStart(5, '0')}`);
    const fetch = async (after: string | undefined, n: number) =>
      keys
        .filter((k) => after === undefined || k > after)
        .slice(0, n)
        .map((k) => ({ key: k, item: k }));
    const page = await scanPage({ limit: 2 }, fetch, () => true);
    expect(page).toEqual({ items: ['k00000', 'k00001'], next: 'k00001' });
    const sparse = await scanPage({ limit: 5 }, fetch, (k) => k === 'k02500');
    expect(sparse.items).toEqual([]);
    expect(sparse.next).not.toBeNull();
    const found: string[] = [];
    let cursor: string | null = sparse.next;
    let calls = 1;
    while (cursor !== null) {
      const p = await scanPage({ limit: 5, cursor }, fetch, (k) => k === 'k02500');
      found.push(...p.items);
      cursor = p.next;
      calls++;
    }
    expect(found).toEqual(['k02500']);
    expect(calls).toBe(3);
  });
});

describe('dead letters', () => {
  it('indexes records that name a webhook and a config; skips undecodable-record ones', () => {
    const rec = deadLetter(hook('wh_d', { attempt: 2 }), T0, 'unrecoverable');
    expect(deadLetterEntryOf(rec)).toEqual({ webhookId: 'wh_d', configId: 'cfg_r', reasonType: 'unrecoverable', deadAtMs: T0, record: rec });
    expect(deadLetterEntryOf('{"reason_type":"invalid_record","dead_at":"2026-01-15T12:00:00Z","raw":"x"}')).toBeNull();
    expect(deadLetterEntryOf('{"webhook_id":"wh_1","reason_type":"invalid_record","dead_at":"2026-01-15T12:00:00Z"}')).toBeNull();
    expect(deadLetterEntryOf('nope')).toBeNull();
  });

  it('the status a dead letter stands for is never newer than what the worker wrote then', () => {
    const e = deadLetterEntryOf(deadLetter(hook('wh_d', { attempt: 4, deferrals: 1, max_attempts: 5 }), T0 + 123))!;
    expect(deadStatusOf(e)).toMatchObject({ state: 'exhausted', attempts: 6, max_attempts: 5, dead_reason: 'exhausted', updated_at_ns: `${T0 + 123}000000`, next_retry_at: null });
  });

  it('indexing producer: produces, then indexes; a retried send after a Redis failure does not produce again', async () => {
    const sent: LogRecord[][] = [];
    const inner: LogProducer = { send: async (r) => void sent.push(r), close: async () => {} };
    let fail = true;
    const indexed: DeadLetterEntry[] = [];
    const hot = { putDeadLetters: async (e: DeadLetterEntry[]) => (fail ? Promise.reject(new Error('redis down')) : void indexed.push(...e)) };
    const p = indexingDeadLetters(inner, hot as never, 'dl');
    const records: LogRecord[] = [
      { topic: 'results', key: 'wh_d', value: '{}' },
      { topic: 'dl', key: 'wh_d', value: deadLetter(hook('wh_d'), T0) },
    ];
    await expect(p.send(records)).rejects.toThrow(/redis down/);
    fail = false;
    await p.send(records);
    expect(sent).toHaveLength(1);
    expect(indexed.map((e) => e.webhookId)).toEqual(['wh_d']);
    await p.send([{ topic: 'results', key: 'x', value: '{}' }]);
    expect(sent).toHaveLength(2);
  });
});

describe('retry and replay helpers', () => {
  it('drops redacted headers (naming them) and lets the caller set them again', () => {
    expect(resendHeaders({ 'x-a': '1', Authorization: '[redacted]', 'x-token': '[redacted]' }, { authorization: 'Bearer n' })).toEqual({
      headers: { 'x-a': '1', authorization: 'Bearer n' },
      dropped: ['x-token'],
    });
  });

  it('a retry goes past every attempt made, deferrals included', () => {
    expect(retryAttempt({ attempt: 0, deferrals: 0 }, null)).toBe(1);
    expect(retryAttempt({ attempt: 4, deferrals: 2 }, { attempts: 7 })).toBe(5);
    // Retried before and dead again: the status has counted more than the old dead letter.
    expect(retryAttempt({ attempt: 4, deferrals: 0 }, { attempts: 9 })).toBe(9);
  });
});
