import type { SqlStorage } from '../runtime';

// Idempotency keys of one destination host, in the DomainGate's SQLite storage. A key is
// written only once its webhook is acknowledged by Kafka; rows live `ttl` and are deleted by
// the gate's alarm (lookups also ignore rows past their time, so a late alarm changes nothing).
// Keys reserved by a multi-host request wait for its settle in `reservations`: a gate evicted
// between the two still holds them, and commits them when the settle comes.

export class GateIdempotencyTable {
  constructor(private readonly sql: SqlStorage) {
    sql.exec('CREATE TABLE IF NOT EXISTS idempotency (k TEXT PRIMARY KEY, webhook_id TEXT NOT NULL, expires_at INTEGER NOT NULL)');
    sql.exec('CREATE INDEX IF NOT EXISTS idempotency_expiry ON idempotency (expires_at)');
    sql.exec('CREATE TABLE IF NOT EXISTS reservations (id TEXT NOT NULL, k TEXT NOT NULL, webhook_id TEXT NOT NULL, expires_at INTEGER NOT NULL)');
    sql.exec('CREATE INDEX IF NOT EXISTS reservations_id ON reservations (id)');
    sql.exec('CREATE INDEX IF NOT EXISTS reservations_k ON reservations (k)');
  }

  reserve(id: string, rows: { k: string; webhookId: string }[], expiresAt: number): void {
    for (const r of rows) this.sql.exec('INSERT INTO reservations (id, k, webhook_id, expires_at) VALUES (?, ?, ?, ?)', id, r.k, r.webhookId, expiresAt);
  }

  /** Whether a reservation not yet settled holds `k`. */
  reserved(k: string, now: number): boolean {
    return this.sql.exec('SELECT 1 FROM reservations WHERE k = ? AND expires_at > ? LIMIT 1', k, now).toArray().length > 0;
  }

  /** A reservation's keys, removed; none when it expired or was settled. */
  release(id: string, now: number): { k: string; webhookId: string }[] {
    const rows = this.sql.exec<{ k: string; webhook_id: string }>('SELECT k, webhook_id FROM reservations WHERE id = ? AND expires_at > ?', id, now).toArray();
    this.sql.exec('DELETE FROM reservations WHERE id = ?', id);
    return rows.map((r) => ({ k: r.k, webhookId: r.webhook_id }));
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
    this.sql.exec('DELETE FROM reservations WHERE expires_at <= ?', now);
    return this.nextExpiry();
  }

  nextExpiry(): number | null {
    const a = this.sql.exec<{ at: number | null }>('SELECT MIN(expires_at) AS at FROM idempotency').one().at;
    const b = this.sql.exec<{ at: number | null }>('SELECT MIN(expires_at) AS at FROM reservations').one().at;
    return a === null ? b : b === null ? a : Math.min(a, b);
  }

  count(): number {
    return this.sql.exec<{ n: number }>('SELECT COUNT(*) AS n FROM idempotency').one().n;
  }
}
