import { describe, expect, it } from 'vitest';
import { ScriptTable } from '../../core/scripts/store';

// Which stored script runs for a config (core/scripts/store.ts): its own, else the nearest
// ancestor's stored with apply_to_children; an ancestor's own-only script is skipped.

const rec = (config_id: string, code: string, apply_to_children?: boolean) =>
  JSON.stringify({ config_id, code, sha256: 'x', updated_at: '2026-01-01T00:00:00Z', ...(apply_to_children === undefined ? {} : { apply_to_children }) });

describe('delivery script resolution', () => {
  it('own script, then the nearest ancestor that applies to children', () => {
    const t = new ScriptTable();
    t.apply('wh', rec('wh', 'parent', true));
    t.apply('wh:42', rec('wh:42', 'mid-own-only', false));
    expect(t.resolve('wh')?.code).toBe('parent');
    expect(t.resolve('wh:42')?.code).toBe('mid-own-only');
    expect(t.resolve('wh:42:6')?.code).toBe('parent');
    expect(t.resolve('wh:7')?.code).toBe('parent');
    expect(t.resolve('whx')).toBeUndefined();
  });

  it("a record without the field (older releases) is the config's own only", () => {
    const t = new ScriptTable();
    t.apply('wh', rec('wh', 'legacy'));
    expect(t.resolve('wh')?.code).toBe('legacy');
    expect(t.resolve('wh:42')).toBeUndefined();
  });
});
