import type { Context } from 'hono';
import type { Config } from '../config/schema';
import type { Enqueuer } from '../pipeline/enqueue';
import type { PipelineEvents } from '../metrics/events';
import type { Logger } from '../ports/logger';
import type { Redriver } from '../reconcile/redrive';
import type { Guards } from '../ports/guards';
import type { DeadLetterStore, OutstandingCounter, StatsReader, StatusReader, TimelineReader, WebhookListing } from '../ports/hot-state';
import type { DoorMeter } from '../metrics/door';
import type { SyncWaits } from '../pipeline/sync-wait';
import type { ChangeFeed } from '../live/change-feed';
import type { Gauges } from '../ports/gauges';
import type { LogProducer } from '../ports/log';
import type { ConfigSecrets } from '../security/config-secrets';
import type { ApiKeyRecord } from '../security/api-keys';
import type { KeyService } from '../security/key-service';
import type { KvStore, LuaHostServices } from '../lua';
import type { ScriptStore } from '../scripts/store';
import type { TransformerRegistry } from '../transformers/registry';
import type { InboundReplays } from '../ports/inbound-replays';
import type { AppStore } from '../apps/store';
import type { Messages } from '../apps/messages';

export type DependencyCheck = { name: string; check: () => Promise<void> };

/** Request headers counted as the Fetch API's Headers holds them (core/http/middleware/limits.ts). */
export type HeaderSize = { count: number; bytes: number };

/** Listings and dead letters of the hot state (the edge's REST reads have none of them). */
export type Listing = WebhookListing & Pick<DeadLetterStore, 'listDeadLetters' | 'getDeadLetter'>;

/** What the auth middleware needs of the API keys. */
export type KeyVerifier = Pick<KeyService, 'synced'> & {
  /** `client`: the caller's address, for a verifier that limits its lookups per client (the edge's key mirror). */
  verify(token: string, client?: string): Promise<ApiKeyRecord | null>;
};

/**
 * What the HTTP layer needs. The optional fields are capabilities: a route that needs one
 * (core/http/route.ts, `needs`) is mounted only where the runtime provides it.
 */
export type ApiDeps = {
  config: Config;
  enqueue: Enqueuer;
  /** What every runtime reads, the edge included (status, auth's config binding, stats). */
  hot: StatusReader & StatsReader;
  log: Logger;
  dependencies: DependencyCheck[];
  clock: { now(): number };
  /** GET /webhooks, GET /deadletter, GET /deadletter/:id. */
  listing?: Listing;
  /** Circuit/pause admin (/endpoints, /configs/:id/pause|resume), with `producer`. */
  guards?: Guards;
  /** Produces drained webhooks back to the pending topic on resume. */
  producer?: LogProducer;
  /** API keys (core/security): without it, a server with api.auth.enabled answers 503 to every guarded route. */
  keys?: KeyVerifier;
  /**
   * The per-key request rate (api.auth.rate_limit) where instances must share it (the edge:
   * one bucket per key in a Durable Object); without it, each instance keeps its own buckets.
   */
  keyRateLimit?: (keyId: string, now: number) => Promise<{ ok: true } | { ok: false; retryAfterSec: number }>;
  /** Creating, listing and revoking API keys (/keys). */
  keyAdmin?: KeyService;
  /** Per-config signing secrets (/configs/:id/secret). */
  configSecrets?: ConfigSecrets;
  /** POST /webhooks/:id/retry and /deadletter/:id/replay (core/reconcile/redrive.ts). */
  redrive?: Redriver;
  /** POST /incoming/:name transformers (loaded by the host). */
  transformers?: TransformerRegistry;
  /** Replay marks of signed /incoming requests, shared by the api processes; without it a copy runs again. */
  inboundReplays?: InboundReplays;
  /** Per-config delivery scripts (/config/:id/script). */
  scripts?: ScriptStore;
  /** Store of the Lua kv module (Redis in production); without it kv calls answer nil, err. */
  luaKv?: KvStore;
  /** Lua http (guarded fetch, per-namespace allowlists) and credentials; without it those modules answer nil, err. */
  lua?: LuaHostServices;
  /**
   * The request's header count and bytes, as headerSize would find them, read by the host from
   * its parser's raw headers: on Node, walking c.req.raw.headers builds a Headers object per
   * request, which nothing else needs. Undefined: headerSize counts them.
   */
  headerSize?: (c: Context) => HeaderSize | undefined;
  /** The peer address of a request's connection (the host knows its server); per-client limits key by it. */
  remoteAddress?: (c: Context) => string | undefined;
  /** Outstanding webhooks per config: api.max_outstanding_per_config and GET /configs/:config/status. */
  outstanding?: OutstandingCounter;
  /** Enqueues that wait for the first attempt (?wait=, Prefer: wait=); without it a wait is not granted. */
  sync?: SyncWaits;
  /** Requests in hand, waits, refusals and outstanding counts, for the host's metrics. */
  door?: DoorMeter;
  /** GET /metrics: the process's metrics as Prometheus text (the host renders them). */
  metrics?: () => Promise<{ contentType: string; body: string }>;
  /** GET /webhooks/events: the process's one shared poll of the listing (core/live/change-feed.ts). */
  changes?: ChangeFeed;
  /** GET /stats/timeline and /stats/gauges (the console's Overview). */
  overview?: TimelineReader & { gauges(): Promise<Gauges> };
  /** Enqueue requests counted by outcome (core/metrics/events.ts). */
  events?: PipelineEvents;
  /** The Svix API (/api/v1): applications, endpoints, event types and messages (core/apps). */
  apps?: { store: AppStore; messages: Messages };
};
