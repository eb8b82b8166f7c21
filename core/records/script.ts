import { z } from 'zod';

// The record of howk.scripts (compacted, one partition): a config's delivery script
// (docs/LUA.md). Key: the config id (`scriptKey`). Value: a ScriptRecord. Tombstone: the
// script is deleted. A record under a key that is not its config's is malformed.

// `apply_to_children`: whether the script also runs for configs below this one (`wh` for
// `wh:42`). Absent (records of older releases) means false: a namespace script reaches its
// children only when whoever stored it said so.
export const ScriptRecordSchema = z.object({ config_id: z.string(), code: z.string(), sha256: z.string(), updated_at: z.string(), apply_to_children: z.boolean().optional() });
export type ScriptRecord = z.infer<typeof ScriptRecordSchema>;

export const scriptKey = (r: Pick<ScriptRecord, 'config_id'>): string => r.config_id;

export const encodeScript = (r: ScriptRecord): string => JSON.stringify(r);

/** The script stored under `key`, or undefined when the value is not one or belongs to another config. */
export const decodeScript = (key: string, value: string): ScriptRecord | undefined => {
  const p = ScriptRecordSchema.safeParse(JSON.parse(value));
  return p.success && scriptKey(p.data) === key ? p.data : undefined;
};
