import bcrypt from 'bcryptjs';
import { createHash } from 'node:crypto';
import type { HashVerifier } from '../../core/transformers/registry';

// bcrypt entries of transformer passwd files (pure-JS bcryptjs: no native build, same
// results as the C implementations for $2a$/$2b$/$2y$). A check at cost 10 takes ~100 ms
// of CPU, so a request with good credentials is remembered for a while: the steady traffic
// of a legitimate sender pays bcrypt once per `ttlMs`, not once per request. Only a digest
// of (hash, password) is kept, in memory, never the password.

export type BcryptVerifierOptions = { ttlMs?: number; maxEntries?: number; now?: () => number };

export const bcryptVerifier = (o: BcryptVerifierOptions = {}): HashVerifier => {
  const ttl = o.ttlMs ?? 5 * 60_000;
  const max = o.maxEntries ?? 1000;
  const now = o.now ?? Date.now;
  const good = new Map<string, number>();
  return async (password, hash) => {
    const digest = createHash('sha256').update(hash).update('\0').update(password).digest('base64');
    const until = good.get(digest);
    if (until !== undefined && until > now()) return true;
    good.delete(digest);
    // bcryptjs's async compare yields to the event loop between rounds: other requests go on.
    const ok = await bcrypt.compare(password, hash);
    if (ok) {
      if (good.size >= max) good.delete(good.keys().next().value as string);
      good.set(digest, now() + ttl);
    }
    return ok;
  };
};
