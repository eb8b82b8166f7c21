import { describe, expect, it } from 'vitest';
import { ConfigSchema } from '../../core/config/schema';
import { createAppStore, type AppStore } from '../../core/apps/store';
import { AppTable } from '../../core/apps/table';
import { appUidScope, claimKey, encodeClaim } from '../../core/apps/uids';
import { ConflictError, UnavailableError } from '../../core/errors/errors';
import { appKey, encodeApplication, type AppRecord } from '../../core/records/application';
import type { LogRecord } from '../../core/ports/log';
import { createSecretBox } from '../../core/signing/secret-box';

// Two api instances of the Svix model on one ordered log (howk.applications has one
// partition): each table reads the log in order, at its own pace. A uid is held by the first
// claim in the log, so both agree whatever the timing, and a fresh replay agrees with them.

const cluster = async () => {
  const log: LogRecord[] = [];
  const tables: AppTable[] = [];
  const read: number[] = [];
  // Each instance's replica reads the log in order, a few ms behind, at its own pace.
  const follow = (i: number, lagMs: number) => {
    const tick = () => {
      while (read[i]! < log.length) {
        const r = log[read[i]!++]!;
        tables[i]!.apply(r.key!, r.value);
      }
    };
    const timer = setInterval(tick, lagMs);
    return () => clearInterval(timer);
  };
  const box = await createSecretBox('k1', { k1: Buffer.alloc(32, 3).toString('base64') });
  const stops: (() => void)[] = [];
  const stores: AppStore[] = [1, 3].map((lag, i) => {
    tables.push(new AppTable(10));
    read.push(0);
    stops.push(follow(i, lag));
    const producer = {
      send: async (records: LogRecord[]) => {
        await new Promise((r) => setTimeout(r, 1 + Math.random() * 4));
        log.push(...records);
      },
      close: async () => {},
    };
    return createAppStore({ config: ConfigSchema.parse({}), table: tables[i]!, producer, box, clock: { now: () => Date.now() }, synced: () => true });
  });
  const settle = () => new Promise((r) => setTimeout(r, 30));
  const replay = () => {
    const t = new AppTable(10);
    for (const r of log) t.apply(r.key!, r.value);
    return t;
  };
  return { log, stores, settle, replay, stop: () => stops.forEach((s) => s()) };
};

const outcomes = async <T>(calls: Promise<T>[]) => {
  const r = await Promise.allSettled(calls);
  const lost = r.filter((x): x is PromiseRejectedResult => x.status === 'rejected');
  for (const l of lost) expect(l.reason).toBeInstanceOf(ConflictError);
  return { won: r.length - lost.length, lost: lost.length };
};

describe('uids across two instances of the Svix model', () => {
  it('20 concurrent creates of one app uid on two instances: one wins, every table and a replay show one app', async () => {
    const c = await cluster();
    const { won, lost } = await outcomes(Array.from({ length: 20 }, (_, i) => c.stores[i % 2]!.createApp({ name: `a${i}`, uid: 'same' })));
    expect({ won, lost }).toEqual({ won: 1, lost: 19 });
    await c.settle();
    const ids = c.stores.map((s) =>
      s
        .listApps()
        .filter((a) => a.uid === 'same')
        .map((a) => a.id),
    );
    expect(ids[0]).toHaveLength(1);
    expect(ids[1]).toEqual(ids[0]);
    expect(
      c
        .replay()
        .listApps()
        .map((a) => a.id),
    ).toEqual(ids[0]);
    c.stop();
  });

  it('20 concurrent creates of one endpoint uid in one app: one wins; an update to a taken uid is 409 and changes nothing', async () => {
    const c = await cluster();
    const app = await c.stores[0]!.createApp({ name: 'a' });
    await c.settle();
    const { won } = await outcomes(Array.from({ length: 20 }, (_, i) => c.stores[i % 2]!.createEndpoint(app.id, { url: `https://example.com/${i}`, uid: 'ep' })));
    expect(won).toBe(1);
    await c.settle();
    for (const s of c.stores) expect(s.listEndpoints(app.id).filter((e) => e.uid === 'ep')).toHaveLength(1);
    const other = await c.stores[1]!.createEndpoint(app.id, { url: 'https://example.com/other', uid: 'other' });
    await c.settle();
    await expect(c.stores[0]!.updateEndpoint(app.id, other.id, { url: 'https://example.com/other', uid: 'ep' })).rejects.toBeInstanceOf(ConflictError);
    const b = await c.stores[0]!.createApp({ name: 'b', uid: 'b' });
    await c.settle();
    await expect(c.stores[1]!.updateApp(app.id, { name: 'a', uid: 'b' })).rejects.toBeInstanceOf(ConflictError);
    await c.settle();
    for (const s of c.stores) {
      expect(s.endpoint(app.id, 'other').id).toBe(other.id);
      expect(s.app('b').id).toBe(b.id);
      expect(s.app(app.id).uid).toBeNull();
    }
    c.stop();
  });

  it('two instances renaming two apps to one uid at once: one holds it, the other keeps its old uid', async () => {
    const c = await cluster();
    const x = await c.stores[0]!.createApp({ name: 'x', uid: 'x' });
    const y = await c.stores[1]!.createApp({ name: 'y', uid: 'y' });
    await c.settle();
    const { won } = await outcomes([c.stores[0]!.updateApp(x.id, { name: 'x', uid: 'z' }), c.stores[1]!.updateApp(y.id, { name: 'y', uid: 'z' })]);
    expect(won).toBe(1);
    await c.settle();
    const views = [...c.stores.map((s) => s.table), c.replay()].map((t) => t.listApps().map((a) => `${a.id}=${a.uid}`));
    expect(views[1]).toEqual(views[0]);
    expect(views[2]).toEqual(views[0]);
    expect(views[0]!.filter((v) => v.endsWith('=z'))).toHaveLength(1);
    expect(views[0]!.filter((v) => v.endsWith('=x') || v.endsWith('=y'))).toHaveLength(1);
    c.stop();
  });

  it('a create whose writer died before removing it stays hidden, and is removed when the holder lets the uid go', async () => {
    const c = await cluster();
    const held = await c.stores[0]!.createApp({ name: 'held', uid: 'u' });
    // What a writer that lost and died leaves in the log: its claim and its app, after the holder's.
    const dead: AppRecord = { ...held, id: 'app_dead', name: 'dead' };
    c.log.push(
      { topic: 't', key: claimKey(appUidScope('u'), dead.id), value: encodeClaim('2026-01-01T00:00:00Z') },
      { topic: 't', key: appKey(dead.id), value: encodeApplication(dead) },
    );
    await c.settle();
    for (const s of c.stores) expect(s.listApps().map((a) => a.id)).toEqual([held.id]);
    await c.stores[1]!.deleteApp('u');
    await c.settle();
    for (const t of [...c.stores.map((s) => s.table), c.replay()]) {
      expect(t.listApps()).toEqual([]);
      expect(t.app('u')).toBeUndefined();
    }
    const again = await c.stores[0]!.createApp({ name: 'new', uid: 'u' });
    await c.settle();
    for (const s of c.stores) expect(s.app('u').id).toBe(again.id);
    c.stop();
  });

  it('a claim not read back within twice kafka.produce_timeout answers 503 (and waits no longer)', async () => {
    const sent: LogRecord[] = [];
    const box = await createSecretBox('k1', { k1: Buffer.alloc(32, 3).toString('base64') });
    // A replica that reads nothing: the produce is acknowledged, nothing comes back.
    const producer = { send: async (r: LogRecord[]) => void sent.push(...r), close: async () => {} };
    const store = createAppStore({
      config: ConfigSchema.parse({ kafka: { produce_timeout: 50 } }),
      table: new AppTable(10),
      producer,
      box,
      clock: { now: () => Date.now() },
      synced: () => true,
    });
    const t0 = performance.now();
    await expect(store.createApp({ name: 'a', uid: 'slow' })).rejects.toBeInstanceOf(UnavailableError);
    expect(performance.now() - t0).toBeLessThan(1000);
    expect(sent.map((r) => r.key)).toEqual([expect.stringMatching(/^uid\/app\/slow\/app_/), expect.stringMatching(/^app\/app_/)]);
    // Without a uid nothing waits for the log.
    expect((await store.createApp({ name: 'b' })).uid).toBeNull();
  });
});
