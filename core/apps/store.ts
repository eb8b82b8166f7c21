import type { Config } from '../config/schema';
import { ulid } from '../domain/ids';
import { ConflictError, NotConfiguredError, NotFoundError, UnavailableError } from '../errors/errors';
import type { LogProducer } from '../ports/log';
import type { SecretEntry } from '../records/config-secret';
import { generateSigningSecret, validEntries } from '../security/config-secrets';
import type { SecretBox } from '../signing/secret-box';
import { toHex } from '../signing/encoding';
import { appKey, applicationKey, encodeApplication, endpointKey, type AppRecord, type EndpointRecord, type EventTypeRecord, type ModelRecord } from '../records/application';
import type { AppIn, EndpointIn, EndpointUpdate, EventTypeIn, EventTypeUpdate } from './schemas';
import type { AppTable } from './table';

// Applications, endpoints and event types of the Svix API: each change is one produce to the
// compacted howk.applications topic (acks=all), then applied to this instance's table at once
// (read-your-writes); the other instances follow through the topic.

export type AppStoreDeps = {
  config: Config;
  table: AppTable;
  producer: LogProducer;
  box?: SecretBox;
  clock: { now(): number };
  synced: () => boolean;
};

const limitReached = (message: string) => new ConflictError('limit_reached', message);

const context = (d: AppStoreDeps) => {
  const topic = d.config.kafka.topics.applications;
  const { svix } = d.config;
  const stamp = () => new Date(d.clock.now()).toISOString();
  const needSync = () => {
    if (!d.synced()) throw new UnavailableError('applications are still loading', 1);
  };
  const needBox = (): SecretBox => {
    if (!d.box) throw new NotConfiguredError('endpoints of the Svix API need HOWK_SECRETS_KEY on the server (their signing secrets are stored encrypted)');
    return d.box;
  };
  const write = async (puts: ModelRecord[], deletes: string[] = []) => {
    const records = [...puts.map((r) => ({ key: applicationKey(r), value: encodeApplication(r) })), ...deletes.map((key) => ({ key, value: null }))];
    await d.producer.send(records.map((r) => ({ topic, ...r })));
    for (const r of records) d.table.apply(r.key, r.value);
  };
  const sealed = async (secret: string, now: number): Promise<SecretEntry> => ({
    id: `sec_${toHex(crypto.getRandomValues(new Uint8Array(8)))}`,
    sealed: await needBox().seal(secret),
    created_at: new Date(now).toISOString(),
    expires_at: null,
  });
  const app = (idOrUid: string): AppRecord => {
    needSync();
    const a = d.table.app(idOrUid);
    if (!a) throw new NotFoundError(`application ${idOrUid}`);
    return a;
  };
  const endpoint = (appIdOrUid: string, idOrUid: string): EndpointRecord => {
    const e = d.table.endpoint(app(appIdOrUid).id, idOrUid);
    if (!e) throw new NotFoundError(`endpoint ${idOrUid}`);
    return e;
  };
  const uidFree = (uid: string | null | undefined, owner: { uid: string | null; id: string } | undefined, taken: { id: string } | undefined, what: string) => {
    if (uid && taken && taken.id !== owner?.id) throw new ConflictError('conflict', `${what} uid ${uid} is already taken`);
  };

  return { d, svix, stamp, needSync, needBox, write, sealed, app, endpoint, uidFree };
};
type Ctx = ReturnType<typeof context>;

const appOps = ({ d, svix, stamp, needSync, write, app, uidFree }: Ctx) => {
  const createApp = async (input: AppIn): Promise<AppRecord> => {
    needSync();
    uidFree(input.uid, undefined, input.uid ? d.table.app(input.uid) : undefined, 'application');
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
    await write([r]);
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
      return found ? { app: found, created: false } : { app: await createApp(input), created: true };
    },
    async updateApp(idOrUid: string, input: AppIn): Promise<AppRecord> {
      const old = app(idOrUid);
      uidFree(input.uid, old, input.uid ? d.table.app(input.uid) : undefined, 'application');
      const r: AppRecord = {
        ...old,
        uid: input.uid ?? null,
        name: input.name,
        metadata: input.metadata ?? {},
        throttle_rate: input.throttleRate ?? input.rateLimit ?? null,
        updated_at: stamp(),
      };
      await write([r]);
      return r;
    },
    /** The application and its endpoints go in one produce: no endpoint outlives it. */
    async deleteApp(idOrUid: string): Promise<void> {
      const a = app(idOrUid);
      await write([], [...d.table.endpointsOf(a.id).map((e) => endpointKey(a.id, e.id)), appKey(a.id)]);
    },
  };
};

const endpointOps = ({ d, svix, stamp, needBox, write, sealed, app, endpoint, uidFree }: Ctx) => {
  // Opened secrets by envelope: a message to many endpoints decrypts each once, not per message. Bounded; oldest out first.
  const opened = new Map<string, string>();
  const open = async (box: SecretBox, envelope: string): Promise<string> => {
    let s = opened.get(envelope);
    if (s === undefined) {
      s = await box.open(envelope);
      if (opened.size >= 20_000) opened.delete(opened.keys().next().value as string);
      opened.set(envelope, s);
    }
    return s;
  };
  const endpointStore = {
    endpoint,
    listEndpoints: (appIdOrUid: string): EndpointRecord[] => d.table.endpointsOf(app(appIdOrUid).id),
    async createEndpoint(appIdOrUid: string, input: EndpointIn): Promise<EndpointRecord> {
      const a = app(appIdOrUid);
      uidFree(input.uid, undefined, input.uid ? d.table.endpoint(a.id, input.uid) : undefined, 'endpoint');
      if (d.table.endpointCount(a.id) >= svix.max_endpoints_per_app)
        throw limitReached(`at most ${svix.max_endpoints_per_app} endpoints per application (svix.max_endpoints_per_app)`);
      if (d.table.totalEndpoints() >= svix.max_endpoints) throw limitReached(`at most ${svix.max_endpoints} endpoints in all (svix.max_endpoints)`);
      const now = d.clock.now();
      const at = new Date(now).toISOString();
      const r: EndpointRecord = {
        kind: 'endpoint',
        id: `ep_${ulid(now)}`,
        app_id: a.id,
        ...endpointSettings(input),
        headers: input.headers ?? {},
        metadata: input.metadata ?? {},
        version: input.version ?? 1,
        secrets: [await sealed(input.secret ?? generateSigningSecret(), now)],
        created_at: at,
        updated_at: at,
      };
      await write([r]);
      return r;
    },
    async updateEndpoint(appIdOrUid: string, idOrUid: string, input: EndpointUpdate): Promise<EndpointRecord> {
      const old = endpoint(appIdOrUid, idOrUid);
      uidFree(input.uid, old, input.uid ? d.table.endpoint(old.app_id, input.uid) : undefined, 'endpoint');
      const r: EndpointRecord = {
        ...old,
        ...endpointSettings(input),
        metadata: input.metadata ?? old.metadata,
        version: input.version ?? old.version,
        updated_at: stamp(),
      };
      await write([r]);
      return r;
    },
    async deleteEndpoint(appIdOrUid: string, idOrUid: string): Promise<void> {
      const e = endpoint(appIdOrUid, idOrUid);
      await write([], [endpointKey(e.app_id, e.id)]);
    },
    async setHeaders(appIdOrUid: string, idOrUid: string, headers: Record<string, string>): Promise<void> {
      const e = endpoint(appIdOrUid, idOrUid);
      await write([{ ...e, headers, updated_at: stamp() }]);
    },
    /** Every secret that signs for the endpoint now, newest first (a rotated-out one until its overlap ends). */
    async signingSecrets(e: EndpointRecord): Promise<string[]> {
      const box = needBox();
      return Promise.all(validEntries({ config_id: e.id, secrets: e.secrets, updated_at: e.updated_at }, d.clock.now()).map((s) => open(box, s.sealed)));
    },
    /** The current secret, as Svix's GET .../secret shows it. */
    async currentSecret(appIdOrUid: string, idOrUid: string): Promise<string> {
      const all = await endpointStore.signingSecrets(endpoint(appIdOrUid, idOrUid));
      if (!all.length) throw new NotFoundError(`signing secret of endpoint ${idOrUid}`);
      return all[0]!;
    },
    /** A new current secret; the previous one keeps signing for signing.rotation_overlap. */
    async rotateSecret(appIdOrUid: string, idOrUid: string, key?: string | null): Promise<void> {
      const e = endpoint(appIdOrUid, idOrUid);
      const now = d.clock.now();
      const until = new Date(now + d.config.signing.rotation_overlap).toISOString();
      const kept = validEntries({ config_id: e.id, secrets: e.secrets, updated_at: e.updated_at }, now).map((s) =>
        s.expires_at === null || s.expires_at > until ? { ...s, expires_at: until } : s,
      );
      await write([{ ...e, secrets: [await sealed(key ?? generateSigningSecret(), now), ...kept], updated_at: new Date(now).toISOString() }]);
    },
  };
  return endpointStore;
};

const eventTypeOps = ({ d, svix, stamp, needSync, write }: Ctx) => {
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
  const ctx = context(d);
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

/** The settings an endpoint create or update sets from its body (Svix's names → the record's). */
const endpointSettings = (input: EndpointIn | EndpointUpdate) => ({
  uid: input.uid ?? null,
  url: input.url,
  description: input.description ?? '',
  disabled: input.disabled ?? false,
  filter_types: input.filterTypes ?? null,
  channels: input.channels ?? null,
  throttle_rate: input.throttleRate ?? input.rateLimit ?? null,
  max_attempts: input.maxAttempts ?? null,
  timeout_ms: input.timeoutMs ?? null,
  max_backoff_ms: input.maxBackoffMs ?? null,
  max_concurrency: input.maxConcurrency ?? null,
});

const eventTypeBody = (i: EventTypeUpdate) => ({
  description: i.description,
  archived: i.archived ?? false,
  deprecated: i.deprecated ?? false,
  group_name: i.groupName ?? null,
  ...(i.schemas === undefined || i.schemas === null ? {} : { schemas: i.schemas }),
});

export type AppStore = ReturnType<typeof createAppStore>;
