import { CompactedTable } from '../log/compacted-table';
import type { Logger } from '../ports/logger';
import { decodeApplication, endpointKey, type AppRecord, type EndpointRecord, type EventTypeRecord, type ModelRecord } from '../records/application';
import { decodeMessage, type MessageRecord } from '../records/message';
import { appUidScope, CLAIM_PREFIX, endpointUidScope, UidClaims } from './uids';

// The in-memory replica of howk.applications and the latest messages of howk.messages: every
// api instance applies each record as it reads it (core/security/replica.ts), so all converge.
// The model's records go through the compacted-table primitive (core/log/compacted-table.ts:
// a malformed record leaves its object as it was); the maps below are indexes over them.

const byId = <T extends { id: string }>(m: Map<string, T> | undefined): T[] => [...(m?.values() ?? [])].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));

const MAX_DELETED = 100_000;

export class AppTable {
  private readonly apps = new Map<string, AppRecord>();
  private readonly appUids = new Map<string, string>();
  private readonly endpoints = new Map<string, Map<string, EndpointRecord>>();
  private readonly eventTypes = new Map<string, EventTypeRecord>();
  private readonly messages = new Map<string, Map<string, MessageRecord>>();
  /** Webhook id -> the kept message that made it: the Inspector's way back in one look-up, not a scan of every delivery. */
  private readonly byWebhook = new Map<string, MessageRecord>();
  /** `<app id>/<endpoint id>` of endpoints deleted since this replica started: their queued webhooks must not go. */
  private readonly deleted = new Set<string>();

  private readonly model: CompactedTable<ModelRecord>;
  /** Who holds each uid (core/apps/uids.ts): an object whose uid another holds is a create that lost, and is not shown. */
  readonly claims = new UidClaims();
  private readonly waiting = new Map<string, { value: string; done: () => void }[]>();

  constructor(
    private readonly messagesKept: number,
    private readonly log?: Logger,
  ) {
    this.model = new CompactedTable({ topic: 'applications', decode: decodeApplication, log });
  }

  apply(key: string, value: string | null): void {
    this.applyRecord(key, value);
    const w = this.waiting.get(key);
    if (!w || value === null) return;
    for (const x of w.filter((x) => x.value === value)) x.done();
  }

  /**
   * Resolves true once this exact record has been applied (by the replica: a writer that waits
   * does not apply it itself), false after `ms`. Called before the produce, so the record
   * cannot come by unseen.
   */
  whenApplied(key: string, value: string, ms: number): Promise<boolean> {
    return new Promise((resolve) => {
      const entry = { value, done: () => end(true) };
      const timer = setTimeout(() => end(false), ms);
      const end = (ok: boolean) => {
        clearTimeout(timer);
        const rest = (this.waiting.get(key) ?? []).filter((x) => x !== entry);
        if (rest.length) this.waiting.set(key, rest);
        else this.waiting.delete(key);
        resolve(ok);
      };
      this.waiting.set(key, [...(this.waiting.get(key) ?? []), entry]);
    });
  }

  private applyRecord(key: string, value: string | null): void {
    if (key.startsWith('msg/')) return this.applyMessage(key, value);
    if (key.startsWith(CLAIM_PREFIX)) {
      if (!this.claims.apply(key, value)) this.log?.warn('malformed record not applied: the row keeps its last good record', { topic: 'applications', key });
      return;
    }
    const applied = this.model.apply(key, value);
    if (applied === 'malformed') return;
    if (applied === 'deleted') {
      const [kind, a, b] = key.split('/');
      if (kind === 'app' && a) this.setApp(a, undefined);
      else if (kind === 'ep' && a && b) {
        this.endpoints.get(a)?.delete(b);
        this.markDeleted(a, b);
      } else if (kind === 'et' && a) this.eventTypes.delete(key.slice(3));
      return;
    }
    const r = this.model.get(key)!;
    if (r.kind === 'app') this.setApp(r.id, r);
    else if (r.kind === 'event_type') this.eventTypes.set(r.name, r);
    else {
      let m = this.endpoints.get(r.app_id);
      if (!m) this.endpoints.set(r.app_id, (m = new Map()));
      m.set(r.id, r);
    }
  }

  private setApp(id: string, r: AppRecord | undefined): void {
    const old = this.apps.get(id);
    if (old?.uid && this.appUids.get(old.uid) === id) this.appUids.delete(old.uid);
    if (!r) {
      for (const e of this.endpoints.get(id)?.keys() ?? []) {
        this.markDeleted(id, e);
        this.model.apply(endpointKey(id, e), null);
      }
      this.apps.delete(id);
      this.endpoints.delete(id);
      for (const m of this.messages.get(id)?.values() ?? []) this.unindex(m);
      this.messages.delete(id);
      return;
    }
    this.apps.set(id, r);
    if (r.uid) this.appUids.set(r.uid, id);
  }

  private markDeleted(appId: string, endpointId: string): void {
    // Bounded: past it the oldest deletions are forgotten (their webhooks long gone by then).
    if (this.deleted.size >= MAX_DELETED) this.deleted.delete(this.deleted.values().next().value as string);
    this.deleted.add(`${appId}/${endpointId}`);
  }

  /** True when the endpoint (by id) was deleted, as this replica has read. */
  endpointDeleted(appId: string, endpointId: string): boolean {
    return this.deleted.has(`${appId}/${endpointId}`);
  }

  private applyMessage(key: string, value: string | null): void {
    if (value === null) return;
    const r = decodeMessage(key, value);
    if (!r) {
      // Not compacted, but read by the same rule: a malformed message changes nothing.
      this.log?.warn('malformed record not applied: the row keeps its last good record', { topic: 'messages', key });
      return;
    }
    let m = this.messages.get(r.app_id);
    if (!m) this.messages.set(r.app_id, (m = new Map()));
    const old = m.get(r.id);
    if (old) this.unindex(old);
    // A message written again (a resend added a delivery) keeps its place: listings go by when it was sent.
    m.set(r.id, r);
    for (const x of r.deliveries) this.byWebhook.set(x.webhook_id, r);
    // The oldest first out: a Map keeps insertion order.
    while (m.size > this.messagesKept) {
      const first = m.keys().next().value as string;
      this.unindex(m.get(first)!);
      m.delete(first);
    }
  }

  private unindex(m: MessageRecord): void {
    for (const x of m.deliveries) if (this.byWebhook.get(x.webhook_id) === m) this.byWebhook.delete(x.webhook_id);
  }

  /** The kept message of `appId` that made webhook `webhookId`, if any. */
  messageOfWebhook(appId: string, webhookId: string): MessageRecord | undefined {
    const m = this.byWebhook.get(webhookId);
    return m?.app_id === appId ? m : undefined;
  }

  /** An application by its id or its uid (Svix addresses both ways; an id wins). */
  app(idOrUid: string): AppRecord | undefined {
    const own = this.apps.get(idOrUid);
    if (own && this.shown(own)) return own;
    return this.appByUid(idOrUid);
  }

  /** An application record by id, shown or not (a create that lost, to remove it). */
  anyApp(id: string): AppRecord | undefined {
    return this.apps.get(id);
  }

  /** The application that holds the uid; a record of one without any claim (written before claims were) by the uid alone. */
  appByUid(uid: string): AppRecord | undefined {
    const scope = appUidScope(uid);
    const id = this.claims.holder(scope) ?? this.appUids.get(uid);
    const a = id === undefined ? undefined : this.apps.get(id);
    return a?.uid === uid && this.shown(a) ? a : undefined;
  }

  /** The object holding `scope`'s uid, when it is claimed: a create that lost keeps its record until its writer removes it. */
  private shownIn(scope: string | undefined, id: string): boolean {
    const holder = scope === undefined ? undefined : this.claims.holder(scope);
    return holder === undefined || holder === id;
  }

  private shown(a: AppRecord): boolean {
    return this.shownIn(a.uid ? appUidScope(a.uid) : undefined, a.id);
  }

  private shownEndpoint(e: EndpointRecord): boolean {
    return this.shownIn(e.uid ? endpointUidScope(e.app_id, e.uid) : undefined, e.id);
  }

  /** Every application record, a create that lost among them (the limit counts it until it is removed). */
  appCount(): number {
    return this.apps.size;
  }

  listApps(): AppRecord[] {
    return byId(this.apps).filter((a) => this.shown(a));
  }

  endpointsOf(appId: string): EndpointRecord[] {
    return byId(this.endpoints.get(appId)).filter((e) => this.shownEndpoint(e));
  }

  /** The application's endpoint records, a create that lost among them (to delete them all). */
  allEndpointsOf(appId: string): EndpointRecord[] {
    return byId(this.endpoints.get(appId));
  }

  endpointCount(appId: string): number {
    return this.endpoints.get(appId)?.size ?? 0;
  }

  /** Endpoints of every application. */
  totalEndpoints(): number {
    let n = 0;
    for (const m of this.endpoints.values()) n += m.size;
    return n;
  }

  /** An endpoint of the application by its id or its uid. */
  endpoint(appId: string, idOrUid: string): EndpointRecord | undefined {
    const m = this.endpoints.get(appId);
    if (!m) return undefined;
    const own = m.get(idOrUid);
    if (own && this.shownEndpoint(own)) return own;
    const holder = this.claims.holder(endpointUidScope(appId, idOrUid));
    if (holder !== undefined) {
      const e = m.get(holder);
      return e?.uid === idOrUid ? e : undefined;
    }
    for (const e of m.values()) if (e.uid === idOrUid) return e;
    return undefined;
  }

  eventType(name: string): EventTypeRecord | undefined {
    return this.eventTypes.get(name);
  }

  eventTypeCount(): number {
    return this.eventTypes.size;
  }

  listEventTypes(): EventTypeRecord[] {
    return [...this.eventTypes.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  message(appId: string, id: string): MessageRecord | undefined {
    return this.messages.get(appId)?.get(id);
  }

  /** The messages kept of an application, oldest first. */
  messagesOf(appId: string): MessageRecord[] {
    return [...(this.messages.get(appId)?.values() ?? [])];
  }
}
