import { toBase64, utf8 } from '../signing/encoding';
import type { HashVerifier } from './registry';

// bcrypt entries of transformer passwd files. A check at cost 10 takes ~100 ms of CPU, so a
// request with good credentials is remembered for a while: the steady traffic of a legitimate
// sender pays bcrypt once per `ttlMs`, not once per request. Only a SHA-256 digest of (hash,
// password) is kept, in memory, never the password. The bcrypt itself is the host's
// (`compare`: bcryptjs in Node and in workerd alike).

export type BcryptVerifierOptions = { ttlMs?: number; maxEntries?: number; now?: () => number };

export const cachedHashVerifier = (compare: (password: string, hash: string) => Promise<boolean>, o: BcryptVerifierOptions = {}): HashVerifier => {
  const ttl = o.ttlMs ?? 5 * 60_000;
  const max = o.maxEntries ?? 1000;
  const now = o.now ?? Date.now;
  const good = new Map<string, number>();
  return async (password, hash) => {
    const digest = toBase64(new Uint8Array(await crypto.subtle.digest('SHA-256', utf8(`${hash}\0${password}`) as BufferSource)));
    const until = good.get(digest);
    if (until !== undefined && until > now()) return true;
    good.delete(digest);
    const ok = await compare(password, hash);
    if (ok) {
      if (good.size >= max) good.delete(good.keys().next().value as string);
      good.set(digest, now() + ttl);
    }
    return ok;
  };
};
