import { ulid } from '../domain/ids';
import { ConflictError, NotFoundError } from '../errors/errors';
import { appKey, encodeApplication, endpointKey, type AppRecord, type EventTypeRecord } from '../records/application';
import { endpointOps } from './endpoint-store';
import type { AppIn, EventTypeIn, EventTypeUpdate } from './schemas';
import { storeContext, uidTaken, type AppStoreDeps, type StoreContext } from './store-context';
import { appUidScope, claimKey, endpointUidsOf } from './uids';

// Applications, endpoints and event types of the Svix API: each change is one produce to the
// compacted howk.applications topic (acks=all), then applied to this instance's table at once
// (read-your-writes); the other instances follow through the topic. A change that takes a uid
// goes through the log first instead: the first claim in the log holds the uid, on every
// instance (core/apps/uids.ts).

export type { AppStoreDeps } from './store-context';

const limitReached = (message: string) => new ConflictError('limit_reached', message);

const appOps = ({ d, svix, stamp, needSync, write, claim, release, needFree, app }: StoreContext) => {
  const free = (uid: string | null | undefined, self?: string) => {
    if (uid) needFree('application', uid, appUidScope(uid), d.table.appByUid(uid), self);
  };
  /** An application record that lost `uid`'s claim, as `release` removes it. */
  const lostApp = (id: string) => {
    const a = d.table.anyApp(id);
    return a && { key: appKey(a.id), uid: a.uid };
  };
  const createApp = async (input: AppIn): Promise<AppRecord> => {
    needSync();
    free(input.uid);
    if (d.table.appCount() >= svix.max_applications) throw limitReached(`at most ${svix.max_applications} applications (svix.max_applications)`);
    const at = stamp();
    const r: AppRecord = {
      kind: 'app',
      id: `app_${ulid(d.clock.now())}`,
      uid: input.uid ?? null,
      name: input.name,
      metadata: input.metadata ?? {},
      throttle_rate: input.throttleRate ?? input.rateLimit ?? null,
      created_at: at,
      updated_at: at,
    };
    if (!r.uid) await write([r]);
    else if (!(await claim(appUidScope(r.uid), r.id, { key: appKey(r.id), value: encodeApplication(r) }))) throw uidTaken('application', r.uid);
    return r;
  };
  return {
    app,
    resolveApp: (idOrUid: string): string | null => d.table.app(idOrUid)?.id ?? null,
    listApps: (): AppRecord[] => (needSync(), d.table.listApps()),
    createApp,
    /** The application of `input.uid` when there is one (Svix's `get_if_exists`), else a new one. */
    async getOrCreateApp(input: AppIn): Promise<{ app: AppRecord; created: boolean }> {
      needSync();
      const found = input.uid ? d.table.appByUid(input.uid) : undefined;
      if (found) return { app: found, created: false };
      try {
        return { app: await createApp(input), created: true };
      } catch (e) {
        // Another instance created it meanwhile: that one is the application of this uid.
        const winner = e instanceof ConflictError && input.uid ? d.table.appByUid(input.uid) : undefined;
        if (winner) return { app: winner, created: false };
        throw e;
      }
    },
    async updateApp(idOrUid: string, input: AppIn): Promise<AppRecord> {
      const old = app(idOrUid);
      const r: AppRecord = {
        ...old,
        uid: input.uid ?? null,
        name: input.name,
        metadata: input.metadata ?? {},
        throttle_rate: input.throttleRate ?? input.rateLimit ?? null,
        updated_at: stamp(),
      };
      free(r.uid, old.id);
      // The new uid is claimed first, and the record changed only once the claim holds.
      if (r.uid && r.uid !== old.uid && !(await claim(appUidScope(r.uid), old.id))) throw uidTaken('application', r.uid);
      const kept = r.uid ? claimKey(appUidScope(r.uid), old.id) : undefined;
      const letGo = old.uid && old.uid !== r.uid ? release(appUidScope(old.uid), old.id, old.uid, lostApp) : [];
      // Claims it does not use (a writer that died between claim and record) go too.
      const stale = d.table.claims.keysOf(old.id).filter((k) => k !== kept);
      await write([r], [...new Set([...letGo, ...stale])]);
      return r;
    },
    /** The application and its endpoints (and the uids they hold) go in one produce: no endpoint outlives it. */
    async deleteApp(idOrUid: string): Promise<void> {
      const a = app(idOrUid);
      const eps = d.table.allEndpointsOf(a.id);
      const letGo = a.uid ? release(appUidScope(a.uid), a.id, a.uid, lostApp) : [];
      const claims = [...d.table.claims.keysUnder(endpointUidsOf(a.id)), ...d.table.claims.keysOf(a.id)];
      await write([], [...new Set([...eps.map((e) => endpointKey(a.id, e.id)), appKey(a.id), ...letGo, ...claims])]);
    },
  };
};

const eventTypeOps = ({ d, svix, stamp, needSync, write }: StoreContext) => {
  const eventTypeStore = {
    listEventTypes: (): EventTypeRecord[] => (needSync(), d.table.listEventTypes()),
    eventType(name: string): EventTypeRecord {
      needSync();
      const r = d.table.eventType(name);
      if (!r) throw new NotFoundError(`event type ${name}`);
      return r;
    },
    async createEventType(input: EventTypeIn): Promise<EventTypeRecord> {
      needSync();
      if (d.table.eventType(input.name)) throw new ConflictError('conflict', `event type ${input.name} already exists`);
      if (d.table.eventTypeCount() >= svix.max_event_types) throw limitReached(`at most ${svix.max_event_types} event types (svix.max_event_types)`);
      const at = stamp();
      const r: EventTypeRecord = { kind: 'event_type', name: input.name, ...eventTypeBody(input), created_at: at, updated_at: at };
      await write([r]);
      return r;
    },
    async updateEventType(name: string, input: EventTypeUpdate): Promise<EventTypeRecord> {
      const old = eventTypeStore.eventType(name);
      const r: EventTypeRecord = { ...old, ...eventTypeBody(input), updated_at: stamp() };
      await write([r]);
      return r;
    },
  };

  return eventTypeStore;
};

/** Runs the calls of the functions it wraps one after another: a check (a free uid, a limit, the record read) and its write are never split by another change. */
const serializer = () => {
  let tail: Promise<unknown> = Promise.resolve();
  return <A extends unknown[], R>(fn: (...a: A) => Promise<R>) =>
    (...a: A): Promise<R> => {
      const run = tail.then(() => fn(...a));
      tail = run.catch(() => undefined);
      return run;
    };
};

export const createAppStore = (d: AppStoreDeps) => {
  const ctx = storeContext(d);
  const ops = { ...appOps(ctx), ...endpointOps(ctx), ...eventTypeOps(ctx) };
  const one = serializer();
  return {
    ...ops,
    createApp: one(ops.createApp),
    getOrCreateApp: one(ops.getOrCreateApp),
    updateApp: one(ops.updateApp),
    deleteApp: one(ops.deleteApp),
    createEndpoint: one(ops.createEndpoint),
    updateEndpoint: one(ops.updateEndpoint),
    deleteEndpoint: one(ops.deleteEndpoint),
    setHeaders: one(ops.setHeaders),
    rotateSecret: one(ops.rotateSecret),
    createEventType: one(ops.createEventType),
    updateEventType: one(ops.updateEventType),
    table: d.table,
    synced: d.synced,
    box: d.box,
  };
};

const eventTypeBody = (i: EventTypeUpdate) => ({
  description: i.description,
  archived: i.archived ?? false,
  deprecated: i.deprecated ?? false,
  group_name: i.groupName ?? null,
  ...(i.schemas === undefined || i.schemas === null ? {} : { schemas: i.schemas }),
});

export type AppStore = ReturnType<typeof createAppStore>;
