import { timingSafeEqual, utf8 } from '../../core/signing/encoding';
import type { Transformer } from './bundle';

// Basic auth of one transformer at the edge: "user:password" from a Worker secret, compared
// in constant time over the whole credential. A script that came with a .passwd file but
// names no secret refuses every request: a missing credential never makes a script public.

export type BasicAuthOutcome = 'open' | 'ok' | 'refused';

export const checkBasicAuth = (t: Transformer, env: Record<string, unknown>, authorization: string | undefined): BasicAuthOutcome => {
  const name = t.config.basic_auth_secret;
  if (!name) return t.hasPasswd ? 'refused' : 'open';
  const want = env[name];
  if (typeof want !== 'string' || !want.includes(':')) return 'refused';
  let got = '';
  if (authorization && /^basic /i.test(authorization)) {
    try {
      got = atob(authorization.slice(6).trim());
    } catch {
      got = '';
    }
  }
  return timingSafeEqual(utf8(got), utf8(want)) ? 'ok' : 'refused';
};
