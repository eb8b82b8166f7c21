import { takeToken, type Bucket } from '../../core/policy/token-bucket';
import type { SqlStorage } from '../runtime';

// Token buckets of one gate (its host's fast-lane admission, or an API key's request rate),
// in the gate's SQLite storage: a gate evicted or redeployed resumes with the level it had,
// instead of a full bucket. Read once per gate instance, written through on every change
// (SQLite in a Durable Object is local: a write costs microseconds).

export class BucketStore {
  private readonly cache = new Map<string, Bucket>();

  constructor(private readonly sql: SqlStorage) {
    sql.exec('CREATE TABLE IF NOT EXISTS buckets (scope TEXT PRIMARY KEY, tokens REAL NOT NULL, at INTEGER NOT NULL)');
  }

  private get(scope: string, burst: number, now: number): Bucket {
    let b = this.cache.get(scope);
    if (!b) {
      const row = this.sql.exec<{ tokens: number; at: number }>('SELECT tokens, at FROM buckets WHERE scope = ?', scope).toArray()[0];
      b = row ? { tokens: row.tokens, at: row.at } : { tokens: burst, at: now };
      this.cache.set(scope, b);
    }
    return b;
  }

  /** Whether every scope has a token; takes one from each only when all do. */
  takeAll(scopes: readonly { scope: string; rate: number; burst: number }[], now: number): boolean {
    const bs = scopes.map((s) => ({ s, b: this.get(s.scope, s.burst, now) }));
    // Refill all first (a zero-token probe), then take from all or none.
    const ok = bs.every(({ s, b }) => {
      const probe = { ...b };
      return takeToken(probe, now, s.rate, s.burst).ok;
    });
    for (const { s, b } of bs) {
      if (ok) takeToken(b, now, s.rate, s.burst);
      else {
        b.tokens = Math.min(s.burst, b.tokens + (Math.max(0, now - b.at) / 1000) * s.rate);
        b.at = now;
      }
      this.sql.exec('INSERT OR REPLACE INTO buckets (scope, tokens, at) VALUES (?, ?, ?)', s.scope, b.tokens, b.at);
    }
    return ok;
  }

  /** One token of one bucket: ok, or how long until one is there. */
  take(scope: string, rate: number, burst: number, now: number): { ok: true } | { ok: false; waitMs: number } {
    const b = this.get(scope, burst, now);
    const r = takeToken(b, now, rate, burst);
    this.sql.exec('INSERT OR REPLACE INTO buckets (scope, tokens, at) VALUES (?, ?, ?)', scope, b.tokens, b.at);
    return r;
  }

  /** Stored levels by scope (as of each bucket's last change). */
  levels(): Record<string, number> {
    const rows = this.sql.exec<{ scope: string; tokens: number }>('SELECT scope, tokens FROM buckets').toArray();
    return Object.fromEntries(rows.map((r) => [r.scope, r.tokens]));
  }
}
