import type { SqlStorage } from '../runtime';

// Idempotency keys of one destination host, in the DomainGate's SQLite storage. A key is
// written only once its webhook is acknowledged by Kafka; rows live `ttl` and are deleted by
// the gate's alarm (lookups also ignore rows past their time, so a late alarm changes nothing).

export class IdempotencyStore {
  constructor(private readonly sql: SqlStorage) {
    sql.exec('CREATE TABLE IF NOT EXISTS idempotency (k TEXT PRIMARY KEY, webhook_id TEXT NOT NULL, expires_at INTEGER NOT NULL)');
    sql.exec('CREATE INDEX IF NOT EXISTS idempotency_expiry ON idempotency (expires_at)');
  }

  /** The webhook that owns `k`, unless none does or its row has expired. */
  owner(k: string, now: number): string | null {
    const rows = this.sql.exec<{ webhook_id: string }>('SELECT webhook_id FROM idempotency WHERE k = ? AND expires_at > ?', k, now).toArray();
    return rows[0]?.webhook_id ?? null;
  }

  /** Records owners; an expired row of the same key is replaced. */
  put(rows: { k: string; webhookId: string; expiresAt: number }[]): void {
    for (const r of rows) this.sql.exec('INSERT OR REPLACE INTO idempotency (k, webhook_id, expires_at) VALUES (?, ?, ?)', r.k, r.webhookId, r.expiresAt);
  }

  /** Deletes expired rows; returns the next expiry, or null when the table is empty. */
  purge(now: number): number | null {
    this.sql.exec('DELETE FROM idempotency WHERE expires_at <= ?', now);
    return this.nextExpiry();
  }

  nextExpiry(): number | null {
    const row = this.sql.exec<{ at: number | null }>('SELECT MIN(expires_at) AS at FROM idempotency').one();
    return row.at ?? null;
  }

  count(): number {
    return this.sql.exec<{ n: number }>('SELECT COUNT(*) AS n FROM idempotency').one().n;
  }
}
