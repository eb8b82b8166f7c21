// Inbound signature verification: the provider's scheme checked on the raw bytes of the
// request, before anything parses them, against every configured secret (rotation).

export type Provider = 'stripe' | 'github' | 'shopify' | 'standard' | 'svix' | 'hookdeck';
export const PROVIDERS: readonly Provider[] = ['stripe', 'github', 'shopify', 'standard', 'svix', 'hookdeck'];

export type VerifyConfig = {
  provider: Provider;
  /** Every secret that may have signed the request: during a rotation, the old and the new. */
  secrets: readonly string[];
  /** Largest age (and clock skew) of a signed timestamp, in seconds; schemes without one ignore it. */
  toleranceSec?: number;
};

export type InboundRequest = {
  /** Header lookup, case-insensitive (a Headers object, or a lower-cased record). */
  header(name: string): string | null;
  /** The body exactly as received. */
  body: Uint8Array;
  /** Milliseconds since the epoch. */
  now: number;
};

export type VerifyFailure = 'no_secret' | 'missing_header' | 'malformed_header' | 'stale_timestamp' | 'bad_signature';
/**
 * What names one signed request for replay protection (schemes that sign a timestamp): a copy
 * carrying the same `id` is the same request, and a copy verifies until `validUntil` (ms).
 */
export type ReplayMark = { id: string; validUntil: number };
export type VerifyResult = { ok: true; replay?: ReplayMark } | { ok: false; reason: VerifyFailure; detail: string };

export type Verifier = (req: InboundRequest, secrets: readonly string[], toleranceSec: number) => Promise<VerifyResult>;

export const DEFAULT_TOLERANCE_SEC = 300;

export const fail = (reason: VerifyFailure, detail: string): VerifyResult => ({ ok: false, reason, detail });
export const OK: VerifyResult = { ok: true };
