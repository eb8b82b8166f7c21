import { AuthError } from '../../errors/errors';
import { verifyGithub } from './github';
import { verifyHookdeck } from './hookdeck';
import { verifyShopify } from './shopify';
import { verifyStandard, verifySvix } from './standard';
import { verifyStripe } from './stripe';
import { DEFAULT_TOLERANCE_SEC, fail, type InboundRequest, type Provider, type Verifier, type VerifyConfig, type VerifyResult } from './types';

export * from './types';

const VERIFIERS: Record<Provider, Verifier> = {
  stripe: verifyStripe,
  github: verifyGithub,
  shopify: verifyShopify,
  standard: verifyStandard,
  svix: verifySvix,
  hookdeck: verifyHookdeck,
};

/** Checks one inbound request against its provider's scheme and every configured secret. */
export const verifyInbound = async (cfg: VerifyConfig, req: InboundRequest): Promise<VerifyResult> => {
  const secrets = cfg.secrets.filter((s) => s.length > 0);
  // No secret must never mean "no check": an unconfigured secret refuses everything.
  if (!secrets.length) return fail('no_secret', `no ${cfg.provider} secret is configured`);
  return VERIFIERS[cfg.provider](req, secrets, cfg.toleranceSec ?? DEFAULT_TOLERANCE_SEC);
};

/** A request whose signature did not verify (401; the reason is safe to show, the secrets never are). */
export class InvalidSignatureError extends AuthError {
  readonly reason: string;
  constructor(provider: Provider, reason: string, detail: string) {
    super(`${provider} signature verification failed: ${detail}`);
    this.reason = reason;
  }
}

export const assertVerified = async (cfg: VerifyConfig, req: InboundRequest): Promise<void> => {
  const r = await verifyInbound(cfg, req);
  if (!r.ok) throw new InvalidSignatureError(cfg.provider, r.reason, r.detail);
};

/** An InboundRequest over Web API objects. */
export const inboundRequest = (headers: Headers, body: Uint8Array, now: number): InboundRequest => ({ header: (n) => headers.get(n), body, now });
