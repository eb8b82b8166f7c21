import { describe, expect, it } from 'vitest';
import { ConfigSchema } from '../../core/config/schema';
import { createAppStore } from '../../core/apps/store';
import { AppTable } from '../../core/apps/table';
import { ConflictError, NotConfiguredError, UnavailableError } from '../../core/errors/errors';
import { createMessages } from '../../core/apps/messages';
import type { EnqueueItem } from '../../core/domain/enqueue';
import type { LogRecord } from '../../core/ports/log';
import { createSecretBox } from '../../core/signing/secret-box';

// The store of the Svix model on one instance: what it writes to howk.applications (sealed
// secrets only), and concurrent changes that must not both pass a check meant for one.

const config = ConfigSchema.parse({ svix: { max_endpoints_per_app: 1 } });
const setup = async (withBox = true, svix: Record<string, number> = { max_endpoints_per_app: 1 }) => {
  const sent: LogRecord[] = [];
  const table = new AppTable(10);
  const producer = {
    // A produce takes a while: concurrent requests overlap as they do against Kafka.
    send: async (records: LogRecord[]) => {
      await new Promise((r) => setTimeout(r, 5));
      sent.push(...records);
      // This instance's replica reads them back a little later.
      setTimeout(() => records.forEach((r) => table.apply(r.key!, r.value)), 2);
    },
    close: async () => {},
  };
  const box = withBox ? await createSecretBox('k1', { k1: Buffer.alloc(32, 3).toString('base64') }) : undefined;
  const store = createAppStore({ config: ConfigSchema.parse({ svix }), table, producer, box, clock: { now: () => Date.now() }, synced: () => true });
  return { store, sent };
};

describe('the Svix model store', () => {
  it('two concurrent creates with one uid: one is stored, the other is 409', async () => {
    const { store } = await setup();
    const results = await Promise.allSettled([store.createApp({ name: 'a', uid: 'same' }), store.createApp({ name: 'b', uid: 'same' })]);
    expect(results.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
    expect((results.find((r) => r.status === 'rejected') as PromiseRejectedResult).reason).toBeInstanceOf(ConflictError);
    expect(store.listApps()).toHaveLength(1);
  });

  it('concurrent endpoint creates stop at svix.max_endpoints_per_app', async () => {
    const { store } = await setup();
    const app = await store.createApp({ name: 'a' });
    const results = await Promise.allSettled([1, 2, 3].map((i) => store.createEndpoint(app.id, { url: `https://example.com/${i}` })));
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    expect(store.listEndpoints(app.id)).toHaveLength(1);
  });

  it('svix.max_endpoints bounds the endpoints of all applications together', async () => {
    const { store } = await setup(true, { max_endpoints: 2, max_endpoints_per_app: 10 });
    const a = await store.createApp({ name: 'a' });
    const b = await store.createApp({ name: 'b' });
    await store.createEndpoint(a.id, { url: 'https://example.com/1' });
    await store.createEndpoint(b.id, { url: 'https://example.com/2' });
    await expect(store.createEndpoint(a.id, { url: 'https://example.com/3' })).rejects.toThrow(/svix.max_endpoints\)/);
    expect(store.table.totalEndpoints()).toBe(2);
  });

  it('an endpoint secret reaches the topic sealed only, and opens back to what was given', async () => {
    const { store, sent } = await setup();
    const app = await store.createApp({ name: 'a' });
    const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
    const e = await store.createEndpoint(app.id, { url: 'https://example.com/h', secret });
    expect(JSON.stringify(sent)).not.toContain(secret.slice(6));
    expect(JSON.stringify(sent)).toContain('enc:v1:k1:');
    expect(await store.currentSecret(app.id, e.id)).toBe(secret);
    await store.rotateSecret(app.id, e.id);
    const both = await store.signingSecrets(store.endpoint(app.id, e.id));
    expect(both).toHaveLength(2);
    expect(both[1]).toBe(secret);
  });

  it('without HOWK_SECRETS_KEY an endpoint is refused (501), nothing written', async () => {
    const { store, sent } = await setup(false);
    const app = await store.createApp({ name: 'a' });
    const before = sent.length;
    await expect(store.createEndpoint(app.id, { url: 'https://example.com/h' })).rejects.toBeInstanceOf(NotConfiguredError);
    expect(sent).toHaveLength(before);
  });
});

describe('a message', () => {
  it('becomes one enqueue of every matching endpoint (one send), each signed with its own secret; a failed send stores no message', async () => {
    const { store, sent } = await setup();
    const app = await store.createApp({ name: 'a' });
    const wide = createAppStore({
      config: ConfigSchema.parse({}),
      table: store.table,
      producer: { send: async (r) => void sent.push(...r), close: async () => {} },
      box: store.box,
      clock: { now: () => Date.now() },
      synced: () => true,
    });
    const a = await wide.createEndpoint(app.id, { url: 'https://example.com/a', filterTypes: ['t'] });
    const b = await wide.createEndpoint(app.id, { url: 'https://example.com/b' });
    await wide.createEndpoint(app.id, { url: 'https://example.com/c', filterTypes: ['other'] });
    const calls: EnqueueItem[][] = [];
    let fail = false;
    const messages = createMessages({
      config,
      store: wide,
      enqueue: async (_configId, items) => {
        calls.push(items);
        if (fail) throw new UnavailableError('kafka down');
        return items.map((it, i) => ({ webhook_id: `wh_${i}`, status: 'pending' as const, endpoint: it.endpoint }));
      },
      producer: { send: async (r) => void sent.push(...r), close: async () => {} },
      clock: { now: () => Date.now() },
    });
    const { message } = await messages.create(app.id, { eventType: 't', payload: {} }, '{"x":1}');
    expect(calls).toHaveLength(1);
    expect(calls[0]!.map((i) => i.endpoint)).toEqual(['https://example.com/a', 'https://example.com/b']);
    expect(calls[0]!.map((i) => i.signing_secret)).toEqual([await wide.currentSecret(app.id, a.id), await wide.currentSecret(app.id, b.id)]);
    expect(calls[0]!.every((i) => i.payload === '{"x":1}')).toBe(true);
    expect(message.deliveries.map((x) => x.endpoint_id)).toEqual([a.id, b.id]);
    fail = true;
    const before = sent.length;
    await expect(messages.create(app.id, { eventType: 't', payload: {} }, '{"x":2}')).rejects.toBeInstanceOf(UnavailableError);
    expect(sent).toHaveLength(before);
    expect(store.table.messagesOf(app.id)).toHaveLength(1);
  });
});
