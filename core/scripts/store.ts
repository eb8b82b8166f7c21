import type { Config } from '../config/schema';
import { NotFoundError, TooLargeError, UnavailableError, ValidationError } from '../errors/errors';
import { checkSyntax } from '../lua';
import type { Logger } from '../ports/logger';
import type { Log, LogProducer } from '../ports/log';
import { startReplica } from '../security/replica';
import { toHex } from '../signing/encoding';
import { CompactedTable } from '../log/compacted-table';
import { decodeScript, encodeScript, type ScriptRecord } from '../records/script';

// Per-config delivery scripts (docs/LUA.md). One record per config on the compacted
// howk.scripts topic (key = config id, tombstone = deleted), replayed from the beginning by
// every api and worker into memory, so that all instances converge on the same version.

/** The replica of howk.scripts on one instance (core/log/compacted-table.ts: a malformed record leaves a config's script as it was). */
export class ScriptTable {
  private readonly byConfig: CompactedTable<ScriptRecord>;

  constructor(log?: Logger) {
    this.byConfig = new CompactedTable({ topic: 'scripts', decode: decodeScript, log });
  }

  apply(configId: string, value: string | null): void {
    this.byConfig.apply(configId, value);
  }

  get(configId: string): ScriptRecord | undefined {
    return this.byConfig.get(configId);
  }

  /** Up to `limit` scripts in config id order, after the config id `after`. */
  list(after: string | undefined, limit: number): ScriptRecord[] {
    return [...this.byConfig.keys()]
      .filter((k) => after === undefined || k > after)
      .sort()
      .slice(0, limit)
      .map((k) => this.byConfig.get(k)!);
  }

  /**
   * The config's own script, else the nearest ancestor's that applies to children
   * (`wh:42:6` → `wh:42` → `wh`); an ancestor whose script is its own only is skipped.
   */
  resolve(configId: string): ScriptRecord | undefined {
    const own = this.byConfig.get(configId);
    if (own) return own;
    for (let cut = configId.lastIndexOf(':'); cut > 0; cut = configId.lastIndexOf(':', cut - 1)) {
      const r = this.byConfig.get(configId.slice(0, cut));
      if (r?.apply_to_children) return r;
    }
    return undefined;
  }
}

export type ScriptStoreDeps = { table: ScriptTable; producer: LogProducer; topic: string; clock: { now(): number }; maxBytes: number; synced: () => boolean };

export const createScriptStore = (d: ScriptStoreDeps) => {
  const needSync = () => {
    if (!d.synced()) throw new UnavailableError('scripts are still loading', 1);
  };
  const write = async (configId: string, r: ScriptRecord | null) => {
    const value = r && encodeScript(r);
    await d.producer.send([{ topic: d.topic, key: configId, value }]);
    d.table.apply(configId, value);
  };
  return {
    /** Size and syntax are checked before anything is stored (LuaSyntaxError → 400 with the line). */
    async put(configId: string, code: string, applyToChildren = false): Promise<ScriptRecord> {
      needSync();
      const bytes = new TextEncoder().encode(code).length;
      if (bytes > d.maxBytes) throw new TooLargeError('script', d.maxBytes);
      if (!code.trim()) throw new ValidationError('script is empty (to remove a script: DELETE /config/:config/script)', 'script');
      await checkSyntax(code);
      const r: ScriptRecord = {
        config_id: configId,
        code,
        sha256: toHex(new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(code)))),
        updated_at: new Date(d.clock.now()).toISOString(),
        apply_to_children: applyToChildren,
      };
      await write(configId, r);
      return r;
    },
    get(configId: string): ScriptRecord {
      needSync();
      const r = d.table.get(configId);
      if (!r) throw new NotFoundError(`script of config ${configId}`);
      return r;
    },
    list(after: string | undefined, limit: number): ScriptRecord[] {
      needSync();
      return d.table.list(after, limit);
    },
    async remove(configId: string): Promise<void> {
      needSync();
      if (!d.table.get(configId)) throw new NotFoundError(`script of config ${configId}`);
      await write(configId, null);
    },
    /**
     * The script that runs before a delivery of this config (own, else an ancestor's that
     * applies to children), with the config it is stored on: credentials open by that owner.
     */
    scriptFor: (configId: string): { code: string; owner: string } | undefined => {
      const r = d.table.resolve(configId);
      return r && { code: r.code, owner: r.config_id };
    },
  };
};

export type ScriptStore = ReturnType<typeof createScriptStore>;

export type ScriptState = { store: ScriptStore; ready: Promise<void>; stop(): Promise<void> };

/** The scripts of one process: the howk.scripts topic replayed into memory by a replica of its own. */
export const startScriptState = (o: { config: Config; logStore: Log; log: Logger; clock: { now(): number }; instance: string }): ScriptState => {
  const table = new ScriptTable(o.log);
  const producer = o.logStore.producer();
  const topic = o.config.kafka.topics.scripts;
  const replica = startReplica({
    logStore: o.logStore,
    producer,
    topics: [topic],
    groupId: `${o.config.kafka.client_id}-scripts-${o.instance}-${crypto.randomUUID().slice(0, 8)}`,
    log: o.log,
    apply: (_topic, key, value) => table.apply(key, value),
  });
  return {
    store: createScriptStore({ table, producer, topic, clock: o.clock, maxBytes: o.config.lua.max_script_bytes, synced: () => replica.synced() }),
    ready: replica.ready,
    stop: async () => {
      await replica.stop();
      await producer.close();
    },
  };
};
