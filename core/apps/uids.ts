// Claims of uids in howk.applications: one record per (uid, object) under its own key,
// `uid/app/<uid>/<app id>` or `uid/ep/<app id>/<uid>/<endpoint id>`, written with (or before) the
// object that takes the uid and tombstoned when it lets it go. The first live claim of a uid in
// log order holds it, on every instance alike (docs/ARCHITECTURE.md, "Unique uids across api
// instances"). A claim key is never written twice while it lives, so compaction (which keeps
// each key's latest record at its own offset) never changes which claim came first.

/** The uid of an application, or of an endpoint within its application: what one claim is for. */
export const appUidScope = (uid: string): string => `uid/app/${uid}`;
export const endpointUidScope = (appId: string, uid: string): string => `uid/ep/${appId}/${uid}`;
/** The scopes of every endpoint uid of one application. */
export const endpointUidsOf = (appId: string): string => `uid/ep/${appId}/`;
export const claimKey = (scope: string, owner: string): string => `${scope}/${owner}`;
export const CLAIM_PREFIX = 'uid/';

const SEGMENTS = { app: 4, ep: 5 } as const;

export const encodeClaim = (at: string): string => JSON.stringify({ kind: 'uid_claim', at });

/** A claim's scope and owner, or undefined when the key is not a claim's. */
const parse = (key: string): { scope: string; owner: string } | undefined => {
  const parts = key.split('/');
  const kind = parts[1] as keyof typeof SEGMENTS;
  if (parts[0] !== 'uid' || SEGMENTS[kind] !== parts.length || parts.some((p) => p === '')) return undefined;
  const cut = key.lastIndexOf('/');
  return { scope: key.slice(0, cut), owner: key.slice(cut + 1) };
};

export class UidClaims {
  /** Scope -> its live claims' owners, in the order their records were read (a Map keeps it). */
  private readonly scopes = new Map<string, Set<string>>();
  /** Owner -> the scopes it claims (an object may hold a claim it did not get to use: a crash mid-update). */
  private readonly owned = new Map<string, Set<string>>();

  /** False when the key is not a claim's (the caller reports it as malformed). */
  apply(key: string, value: string | null): boolean {
    const c = parse(key);
    if (!c) return false;
    const owners = this.scopes.get(c.scope);
    // A claim read again moves to its new place, where compaction leaves it.
    owners?.delete(c.owner);
    this.owned.get(c.owner)?.delete(c.scope);
    if (value === null) {
      if (owners?.size === 0) this.scopes.delete(c.scope);
      if (this.owned.get(c.owner)?.size === 0) this.owned.delete(c.owner);
      return true;
    }
    if (owners) owners.add(c.owner);
    else this.scopes.set(c.scope, new Set([c.owner]));
    const mine = this.owned.get(c.owner);
    if (mine) mine.add(c.scope);
    else this.owned.set(c.owner, new Set([c.scope]));
    return true;
  }

  /** The object that holds the uid: the first live claim. */
  holder(scope: string): string | undefined {
    return this.scopes.get(scope)?.values().next().value;
  }

  /** Live claims of the uid other than the holder's, first come first. */
  losers(scope: string): string[] {
    return [...(this.scopes.get(scope) ?? [])].slice(1);
  }

  /** Keys of every live claim of `owner`. */
  keysOf(owner: string): string[] {
    return [...(this.owned.get(owner) ?? [])].map((s) => claimKey(s, owner));
  }

  /** Keys of every live claim whose scope starts with `prefix` (the endpoint uids of one application). */
  keysUnder(prefix: string): string[] {
    const out: string[] = [];
    for (const [scope, owners] of this.scopes) if (scope.startsWith(prefix)) for (const o of owners) out.push(claimKey(scope, o));
    return out;
  }
}
