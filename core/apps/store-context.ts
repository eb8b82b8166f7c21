import type { Config } from '../config/schema';
import { ConflictError, NotConfiguredError, NotFoundError, UnavailableError } from '../errors/errors';
import type { LogProducer } from '../ports/log';
import type { SecretEntry } from '../records/config-secret';
import type { SecretBox } from '../signing/secret-box';
import { toHex } from '../signing/encoding';
import { applicationKey, encodeApplication, type AppRecord, type EndpointRecord, type ModelRecord } from '../records/application';
import type { AppTable } from './table';
import { claimKey, encodeClaim } from './uids';

// What the operations of the Svix model's store share: the write to howk.applications, the
// look-ups that 404, and the taking and letting go of uids (core/apps/uids.ts).

export type AppStoreDeps = {
  config: Config;
  table: AppTable;
  producer: LogProducer;
  box?: SecretBox;
  clock: { now(): number };
  synced: () => boolean;
};

type Rec = { key: string; value: string };

export const uidTaken = (what: string, uid: string) => new ConflictError('conflict', `${what} uid ${uid} is already taken`);

export const storeContext = (d: AppStoreDeps) => {
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
  /** Produced, then applied here at once (read-your-writes); the other instances follow through the topic. */
  const write = async (puts: ModelRecord[], deletes: string[] = []) => {
    const records = [...puts.map((r) => ({ key: applicationKey(r), value: encodeApplication(r) })), ...deletes.map((key) => ({ key, value: null }))];
    await d.producer.send(records.map((r) => ({ topic, ...r })));
    for (const r of records) d.table.apply(r.key, r.value);
  };
  /**
   * Produced and NOT applied here: applied when this instance's replica reads them back, so its
   * table holds every record before them in log order, as every other instance's does.
   */
  const throughLog = async (records: Rec[]) => {
    const last = records[records.length - 1]!;
    // The produce may take kafka.produce_timeout; reading it back, as long again.
    const seen = d.table.whenApplied(last.key, last.value, 2 * d.config.kafka.produce_timeout);
    await d.producer.send(records.map((r) => ({ topic, ...r })));
    if (!(await seen)) throw new UnavailableError('the uid was claimed but its claim was not read back in time; retry (a retry may find the uid taken by this request)', 1);
  };
  /**
   * Claims `scope`'s uid for `owner`, with `record` (a new object) in the same produce. The first
   * live claim in the log holds it: the other claimant removes what it wrote (the object first,
   * so it is never shown without a claim) and gets false.
   */
  const claim = async (scope: string, owner: string, record?: Rec): Promise<boolean> => {
    const key = claimKey(scope, owner);
    await throughLog([{ key, value: encodeClaim(stamp()) }, ...(record ? [record] : [])]);
    if (d.table.claims.holder(scope) === owner) return true;
    await write([], [...(record ? [record.key] : []), key]);
    return false;
  };
  /**
   * Tombstones that let `scope`'s uid go: `owner`'s claim, and the claims of objects that lost it,
   * with the objects themselves when they carry the uid (a writer that died before removing its
   * lost create), so that none of them takes the uid over once the holder lets it go.
   */
  const release = (scope: string, owner: string, uid: string, lostObject: (id: string) => { key: string; uid: string | null } | undefined): string[] => {
    const lost = d.table.claims.losers(scope).filter((id) => id !== owner);
    const objects = lost.flatMap((id) => {
      const o = lostObject(id);
      return o && o.uid === uid ? [o.key] : [];
    });
    return [...objects, ...[owner, ...lost].map((id) => claimKey(scope, id))];
  };
  /** 409 unless the uid is free as this instance reads it (or already `self`'s); a claim settles races between instances. */
  const needFree = (what: string, uid: string | null | undefined, scope: string, legacy: { id: string } | undefined, self?: string) => {
    if (!uid) return;
    const holder = d.table.claims.holder(scope) ?? legacy?.id;
    if (holder !== undefined && holder !== self) throw uidTaken(what, uid);
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

  return { d, svix, stamp, needSync, needBox, write, claim, release, needFree, sealed, app, endpoint };
};
export type StoreContext = ReturnType<typeof storeContext>;
