import { errorMessage } from '../errors/errors';
import type { Logger } from '../ports/logger';

// The one in-memory table of a compacted topic: every replica (API keys, config secrets,
// scripts, the Svix model) and every rebuild fold (howk.state, howk.guards) applies its
// records through it, in log order, so that all read a record the same way:
//
//  - a record that decodes sets its key's row (or folds into it, `merge`);
//  - a tombstone deletes the row (or folds into it, `tombstone`);
//  - a malformed record (not JSON, not the topic's schema, under a key that is not its
//    own, or anything its decoder throws on) changes nothing: the row keeps the last good
//    record of its key. It is counted (`malformed`) and logged with its topic and key.
//
// Keeping the old row rather than deleting it: the key's last good record is still the last
// thing this instance knows for sure, and a record it cannot read (a newer writer, a corrupt
// byte) must not make a replica differ from its own past, nor a rebuild lose a pause or a
// retry that was in force (docs/ARCHITECTURE.md, "Compacted topics: one table").

export type CompactedTableOptions<T, R> = {
  /** For the log line of a malformed record. */
  topic: string;
  /** The record of `key`; undefined (or a throw) when it is malformed. */
  decode: (key: string, value: string) => T | undefined;
  /** The row after a good record (default: the record). */
  merge?: (key: string, next: T, old: R | undefined) => R;
  /** The row after a tombstone (default: none, the row is deleted). */
  tombstone?: (key: string, old: R | undefined) => R | undefined;
  log?: Logger;
};

/** What a record did to the table. */
export type Applied = 'set' | 'deleted' | 'malformed';

export class CompactedTable<T, R = T> {
  private readonly rows = new Map<string, R>();
  private bad = 0;

  constructor(private readonly o: CompactedTableOptions<T, R>) {}

  apply(key: string, value: string | null): Applied {
    const old = this.rows.get(key);
    if (value === null) {
      const row = this.o.tombstone ? this.o.tombstone(key, old) : undefined;
      if (row === undefined) this.rows.delete(key);
      else this.rows.set(key, row);
      return 'deleted';
    }
    let next: T | undefined;
    let why = 'not a record of this topic under this key';
    try {
      next = this.o.decode(key, value);
    } catch (e) {
      why = errorMessage(e);
    }
    if (next === undefined) {
      this.bad++;
      this.o.log?.warn('malformed record not applied: the row keeps its last good record', { topic: this.o.topic, key, error: why });
      return 'malformed';
    }
    this.rows.set(key, this.o.merge ? this.o.merge(key, next, old) : (next as unknown as R));
    return 'set';
  }

  get(key: string): R | undefined {
    return this.rows.get(key);
  }

  has(key: string): boolean {
    return this.rows.has(key);
  }

  keys(): IterableIterator<string> {
    return this.rows.keys();
  }

  values(): IterableIterator<R> {
    return this.rows.values();
  }

  get size(): number {
    return this.rows.size;
  }

  /** Malformed records seen so far (each left the table as it was). */
  get malformed(): number {
    return this.bad;
  }
}
