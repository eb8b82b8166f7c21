import type { Context } from 'hono';
import type { Config } from '../config/schema';
import type { Enqueuer } from '../pipeline/enqueue';
import type { Logger } from '../ports/logger';
import type { Redriver } from '../reconcile/redrive';
import type { Guards } from '../ports/guards';
import type { DeadLetterStore, StatsReader, StatusReader, WebhookListing } from '../ports/hot-state';
import type { LogProducer } from '../ports/log';
import type { ConfigSecrets } from '../security/config-secrets';
import type { KeyService } from '../security/key-service';
import type { KvStore, LuaHostServices } from '../lua';
import type { ScriptStore } from '../scripts/store';
import type { TransformerRegistry } from '../transformers/registry';

export type DependencyCheck = { name: string; check: () => Promise<void> };

/**
 * What the HTTP layer needs. Capabilities added later (admin, scripts, keys) join as optional fields.
 * `hot` is what the routes shared with the edge read (status, auth, stats); the listings
 * ask for more (NodeApiDeps).
 */
export type ApiDeps = {
  config: Config;
  enqueue: Enqueuer;
  hot: StatusReader & StatsReader;
  log: Logger;
  dependencies: DependencyCheck[];
  clock: { now(): number };
  /** Circuit/pause admin (/endpoints, /configs/:id/pause|resume); 501 without it. */
  guards?: Guards;
  /** Produces drained webhooks back to the pending topic on resume. */
  producer?: LogProducer;
  /** API keys (core/security): without it, a server with api.auth.enabled answers 503 to every guarded route. */
  keys?: KeyService;
  /** Per-config signing secrets: the /configs/:id/secret routes answer 501 without it. */
  configSecrets?: ConfigSecrets;
  /** POST /webhooks/:id/retry and /deadletter/:id/replay (core/reconcile/redrive.ts); 501 without it. */
  redrive?: Redriver;
  /** POST /incoming/:name transformers (loaded by the host); 501 without it. */
  transformers?: TransformerRegistry;
  /** Per-config delivery scripts (/config/:id/script); 501 without it. */
  scripts?: ScriptStore;
  /** Store of the Lua kv module (Redis in production); without it kv calls answer nil, err. */
  luaKv?: KvStore;
  /** Lua http (guarded fetch, per-namespace allowlists) and credentials; without it those modules answer nil, err. */
  lua?: LuaHostServices;
  /** The peer address of a request's connection (the host knows its server); per-client limits key by it. */
  remoteAddress?: (c: Context) => string | undefined;
  /** GET /metrics: the process's metrics as Prometheus text (the host renders them); 501 without it. */
  metrics?: () => Promise<{ contentType: string; body: string }>;
};

/** howk-api and howk-dev: every route, the listings of webhooks and dead letters included. */
export type NodeApiDeps = ApiDeps & { hot: WebhookListing & DeadLetterStore };
