import { ulid } from '../domain/ids';
import { ConflictError, NotFoundError } from '../errors/errors';
import { generateSigningSecret, validEntries } from '../security/config-secrets';
import type { SecretBox } from '../signing/secret-box';
import { encodeApplication, endpointKey, type EndpointRecord } from '../records/application';
import type { EndpointIn, EndpointUpdate } from './schemas';
import { uidTaken, type StoreContext } from './store-context';
import { claimKey, endpointUidScope } from './uids';

// Endpoints of the Svix API's applications: their settings, headers and signing secrets. A uid
// is unique within its application on every instance: taken through a claim (core/apps/uids.ts).

const limitReached = (message: string) => new ConflictError('limit_reached', message);

export const endpointOps = ({ d, svix, stamp, needBox, write, claim, release, needFree, sealed, app, endpoint }: StoreContext) => {
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
  const free = (appId: string, uid: string | null | undefined, self?: string) => {
    if (uid) needFree('endpoint', uid, endpointUidScope(appId, uid), d.table.endpoint(appId, uid), self);
  };
  /** A record of the application's that lost `uid`'s claim, as `release` removes it. */
  const lostEndpoint = (appId: string) => (id: string) => {
    const e = d.table.allEndpointsOf(appId).find((x) => x.id === id);
    return e && { key: endpointKey(appId, e.id), uid: e.uid };
  };
  const endpointStore = {
    endpoint,
    listEndpoints: (appIdOrUid: string): EndpointRecord[] => d.table.endpointsOf(app(appIdOrUid).id),
    async createEndpoint(appIdOrUid: string, input: EndpointIn): Promise<EndpointRecord> {
      const a = app(appIdOrUid);
      free(a.id, input.uid);
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
      if (!r.uid) await write([r]);
      else if (!(await claim(endpointUidScope(a.id, r.uid), r.id, { key: endpointKey(a.id, r.id), value: encodeApplication(r) }))) throw uidTaken('endpoint', r.uid);
      return r;
    },
    async updateEndpoint(appIdOrUid: string, idOrUid: string, input: EndpointUpdate): Promise<EndpointRecord> {
      const old = endpoint(appIdOrUid, idOrUid);
      const r: EndpointRecord = {
        ...old,
        ...endpointSettings(input),
        metadata: input.metadata ?? old.metadata,
        version: input.version ?? old.version,
        updated_at: stamp(),
      };
      free(old.app_id, r.uid, old.id);
      // The new uid is claimed first, and the record changed only once the claim holds.
      if (r.uid && r.uid !== old.uid && !(await claim(endpointUidScope(old.app_id, r.uid), old.id))) throw uidTaken('endpoint', r.uid);
      const kept = r.uid ? claimKey(endpointUidScope(old.app_id, r.uid), old.id) : undefined;
      const letGo = old.uid && old.uid !== r.uid ? release(endpointUidScope(old.app_id, old.uid), old.id, old.uid, lostEndpoint(old.app_id)) : [];
      // Claims of this endpoint it does not use (a writer that died between claim and record) go too.
      const stale = d.table.claims.keysOf(old.id).filter((k) => k !== kept);
      await write([r], [...new Set([...letGo, ...stale])]);
      return r;
    },
    async deleteEndpoint(appIdOrUid: string, idOrUid: string): Promise<void> {
      const e = endpoint(appIdOrUid, idOrUid);
      const letGo = e.uid ? release(endpointUidScope(e.app_id, e.uid), e.id, e.uid, lostEndpoint(e.app_id)) : [];
      await write([], [...new Set([endpointKey(e.app_id, e.id), ...letGo, ...d.table.claims.keysOf(e.id)])]);
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
