import { describe, expect, it } from 'vitest';
import { listensTo, matchingEndpoints } from '../../core/apps/filter';
import { disabledEndpointCheck, endpointThrottleOf, messageWebhookKey } from '../../core/apps/endpoint-rules';
import { applicationKey, decodeApplication, encodeApplication, endpointKey, type AppRecord, type EndpointRecord } from '../../core/records/application';
import { decodeMessage, encodeMessage, messageKeyOf, type MessageRecord } from '../../core/records/message';
import { AppTable } from '../../core/apps/table';
import { splitSecrets } from '../../core/domain/secret-format';

// The Svix model's pure parts: which endpoints a message reaches, how records are stored on
// howk.applications / howk.messages and read back, and the replica table they fold into.

const at = '2026-01-01T00:00:00.000Z';
const app = (id: string, uid: string | null = null): AppRecord => ({ kind: 'app', id, uid, name: id, metadata: {}, throttle_rate: null, created_at: at, updated_at: at });
const ep = (appId: string, id: string, o: Partial<EndpointRecord> = {}): EndpointRecord => ({
  kind: 'endpoint',
  id,
  app_id: appId,
  uid: null,
  url: 'https://example.com/h',
  description: '',
  disabled: false,
  filter_types: null,
  channels: null,
  throttle_rate: null,
  headers: {},
  metadata: {},
  version: 1,
  secrets: [{ id: 'sec_1', sealed: 'enc:v1:k1:a:b', created_at: at, expires_at: null }],
  created_at: at,
  updated_at: at,
  ...o,
});
const msg = (appId: string, id: string): MessageRecord => ({
  kind: 'message',
  id,
  app_id: appId,
  event_type: 't',
  event_id: null,
  channels: null,
  payload: '{"a":1}',
  timestamp: at,
  deliveries: [],
});

describe('filter matching', () => {
  it('no filter: every event type; a filter: only the types it names', () => {
    expect(listensTo(ep('a', 'e1'), 'invoice.paid', null)).toBe(true);
    expect(listensTo(ep('a', 'e1', { filter_types: ['invoice.paid', 'user.created'] }), 'invoice.paid', null)).toBe(true);
    expect(listensTo(ep('a', 'e1', { filter_types: ['user.created'] }), 'invoice.paid', null)).toBe(false);
    expect(listensTo(ep('a', 'e1', { filter_types: [] }), 'x', null)).toBe(true);
  });

  it('a disabled endpoint gets nothing', () => {
    expect(listensTo(ep('a', 'e1', { disabled: true }), 'x', null)).toBe(false);
  });

  it('channels: an endpoint with channels gets only messages sharing one; one without gets all', () => {
    const chan = ep('a', 'e1', { channels: ['eu', 'us'] });
    expect(listensTo(chan, 'x', ['us'])).toBe(true);
    expect(listensTo(chan, 'x', ['asia'])).toBe(false);
    expect(listensTo(chan, 'x', null)).toBe(false);
    expect(listensTo(ep('a', 'e2'), 'x', ['asia'])).toBe(true);
  });

  it('3 of 5 endpoints match, in their order', () => {
    const eps = [
      ep('a', 'e0', { filter_types: ['p'] }),
      ep('a', 'e1', { filter_types: ['p', 'u'] }),
      ep('a', 'e2'),
      ep('a', 'e3', { filter_types: ['u'] }),
      ep('a', 'e4', { filter_types: ['f'] }),
    ];
    expect(matchingEndpoints(eps, 'p', null).map((e) => e.id)).toEqual(['e0', 'e1', 'e2']);
  });
});

describe('record encoding', () => {
  it('a record reads back as written, under its own key', () => {
    const e = ep('app_1', 'ep_1', { filter_types: ['a'], headers: { 'x-a': '1' } });
    expect(applicationKey(e)).toBe('ep/app_1/ep_1');
    expect(decodeApplication(applicationKey(e), encodeApplication(e))).toEqual(e);
    expect(decodeApplication('app/app_1', encodeApplication(app('app_1', 'acme')))).toEqual(app('app_1', 'acme'));
    expect(decodeMessage('msg/app_1/msg_1', encodeMessage(msg('app_1', 'msg_1')))).toEqual(msg('app_1', 'msg_1'));
  });

  it('a record under a key that is not its own, or not a record, is refused (it cannot overwrite another object)', () => {
    expect(decodeApplication(endpointKey('app_2', 'ep_1'), encodeApplication(ep('app_1', 'ep_1')))).toBeUndefined();
    expect(decodeApplication('app/x', '{not json')).toBeUndefined();
    expect(decodeApplication('app/x', JSON.stringify({ kind: 'app', id: 'x' }))).toBeUndefined();
  });

  it('an endpoint record holds sealed secrets only', () => {
    const bad = { ...ep('a', 'e'), secrets: [{ id: 's', sealed: 'whsec_plain', created_at: at, expires_at: null }] };
    expect(decodeApplication('ep/a/e', JSON.stringify(bad))).toBeUndefined();
  });
});

describe('the replica table', () => {
  const put = (t: AppTable, r: AppRecord | EndpointRecord | MessageRecord) =>
    r.kind === 'message' ? t.apply(messageKeyOf(r), encodeMessage(r)) : t.apply(applicationKey(r), encodeApplication(r));

  it('finds applications and endpoints by id or uid; a tombstone removes them', () => {
    const t = new AppTable(10);
    put(t, app('app_1', 'acme'));
    put(t, ep('app_1', 'ep_1', { uid: 'main' }));
    expect(t.app('acme')?.id).toBe('app_1');
    expect(t.endpoint('app_1', 'main')?.id).toBe('ep_1');
    put(t, app('app_1', 'acme-2'));
    expect(t.app('acme')).toBeUndefined();
    expect(t.app('acme-2')?.id).toBe('app_1');
    t.apply('ep/app_1/ep_1', null);
    expect(t.endpointsOf('app_1')).toEqual([]);
    t.apply('app/app_1', null);
    expect(t.app('app_1')).toBeUndefined();
    expect(t.app('acme-2')).toBeUndefined();
  });

  it('keeps the latest messages of each application, oldest out first', () => {
    const t = new AppTable(2);
    put(t, app('app_1'));
    for (const id of ['m1', 'm2', 'm3']) put(t, msg('app_1', id));
    expect(t.messagesOf('app_1').map((m) => m.id)).toEqual(['m2', 'm3']);
    expect(t.message('app_1', 'm1')).toBeUndefined();
  });

  it('finds the kept message that made a webhook, in its own application only, until it is evicted or its application deleted', () => {
    const t = new AppTable(2);
    put(t, app('app_1'));
    put(t, app('app_2'));
    const made = (id: string, hooks: string[]) => ({ ...msg('app_1', id), deliveries: hooks.map((w, i) => ({ endpoint_id: `ep_${i}`, webhook_id: w })) });
    put(t, made('m1', ['wh_1', 'wh_2']));
    expect(t.messageOfWebhook('app_1', 'wh_2')?.id).toBe('m1');
    expect(t.messageOfWebhook('app_2', 'wh_2')).toBeUndefined();
    put(t, made('m2', ['wh_3']));
    put(t, made('m3', ['wh_4']));
    expect(t.messageOfWebhook('app_1', 'wh_1')).toBeUndefined();
    expect(t.messageOfWebhook('app_1', 'wh_3')?.id).toBe('m2');
    t.apply('app/app_1', null);
    expect(t.messageOfWebhook('app_1', 'wh_4')).toBeUndefined();
  });
});

describe('the worker gate of disabled endpoints', () => {
  const t = new AppTable(10);
  t.apply('app/app_1', encodeApplication(app('app_1')));
  const gate = disabledEndpointCheck(t);
  const hook = (epId: string, created: string, key = messageWebhookKey('msg_1', epId)) => ({ config_id: 'app_1', idempotency_key: key, created_at: created });

  it('a webhook queued before its endpoint was disabled dead-letters', () => {
    t.apply('ep/app_1/ep_off', encodeApplication(ep('app_1', 'ep_off', { disabled: true, updated_at: '2026-01-02T00:00:00.000Z' })));
    expect(gate(hook('ep_off', '2026-01-01T12:00:00.000Z'))).toMatch(/ep_off .* disabled/);
  });

  it('goes: a disabling older than the webhook (this replica lags the api), an enabled endpoint or one this replica never saw, a webhook no message made', () => {
    expect(gate(hook('ep_off', '2026-01-03T00:00:00.000Z'))).toBeUndefined();
    t.apply('ep/app_1/ep_on', encodeApplication(ep('app_1', 'ep_on', { updated_at: '2026-01-02T00:00:00.000Z' })));
    expect(gate(hook('ep_on', '2026-01-01T00:00:00.000Z'))).toBeUndefined();
    expect(gate(hook('ep_never_seen', '2026-01-01T00:00:00.000Z'))).toBeUndefined();
    expect(gate(hook('ep_off', '2026-01-01T00:00:00.000Z', 'my-own-key'))).toBeUndefined();
    expect(gate({ config_id: 'app_1', created_at: '2026-01-01T00:00:00.000Z' })).toBeUndefined();
  });
});

describe('splitSecrets', () => {
  it('splits the whsec_ secrets an endpoint seals together, and nothing else', () => {
    expect(splitSecrets('whsec_AAAA whsec_BBBB')).toEqual(['whsec_AAAA', 'whsec_BBBB']);
    expect(splitSecrets('whsec_AAAA')).toEqual(['whsec_AAAA']);
    expect(splitSecrets('a raw secret with spaces')).toEqual(['a raw secret with spaces']);
  });
});

describe('the worker gate of deleted endpoints and throttle rates', () => {
  const t = new AppTable(10);
  t.apply('app/app_1', encodeApplication(app('app_1')));
  const hook = (epId: string) => ({ config_id: 'app_1', idempotency_key: messageWebhookKey('msg_1', epId), created_at: '2026-01-03T00:00:00.000Z' });

  it('a deleted endpoint dead-letters its webhooks, whatever their age; so do those of a deleted application', () => {
    t.apply('ep/app_1/ep_del', encodeApplication(ep('app_1', 'ep_del')));
    t.apply('ep/app_1/ep_del', null);
    expect(disabledEndpointCheck(t)(hook('ep_del'))).toMatch(/ep_del .* deleted/);
    t.apply('ep/app_1/ep_kept', encodeApplication(ep('app_1', 'ep_kept')));
    t.apply('app/app_1', null);
    expect(disabledEndpointCheck(t)(hook('ep_kept'))).toMatch(/ep_kept .* deleted/);
  });

  it("the throttle is the endpoint's current throttleRate, none without one", () => {
    t.apply('app/app_1', encodeApplication(app('app_1')));
    t.apply('ep/app_1/ep_t', encodeApplication(ep('app_1', 'ep_t', { throttle_rate: 5 })));
    t.apply('ep/app_1/ep_f', encodeApplication(ep('app_1', 'ep_f')));
    const of = endpointThrottleOf(t);
    expect(of(hook('ep_t'))).toEqual({ endpointId: 'ep_t', rate: 5 });
    expect(of(hook('ep_f'))).toBeUndefined();
    t.apply('ep/app_1/ep_t', encodeApplication(ep('app_1', 'ep_t', { throttle_rate: 2 })));
    expect(of(hook('ep_t'))).toEqual({ endpointId: 'ep_t', rate: 2 });
  });
});
