import { describe, expect, it } from 'vitest';
import { createLuaEngine } from '../../core/lua/engine';
import { runDeliveryScript } from '../../core/lua/delivery';
import { runTransformer } from '../../core/lua/transformer';
import type { KvStore } from '../../core/lua/types';
import { uniq } from '../helpers/env';

// The Lua kv store seen by scripts of different owners: a transformer, a config, a child
// config (`wh:42` runs its parent `wh`'s script) each have their own, whatever their names.
// Shared by the in-memory store and the Redis one; names are unique per run, nothing is flushed.

const engine = createLuaEngine();

export const luaKvContract = (name: string, makeStore: () => KvStore) => {
  describe(`Lua kv isolation: ${name}`, () => {
    const store = makeStore();
    const delivery = async (configId: string, code: string): Promise<string> => {
      const out = await runDeliveryScript(code, { payload: '{}', headers: {}, config_id: configId, attempt: 0 }, { engine, services: { kv: store } });
      return out.body;
    };
    const transformer = async (script: string, code: string) => runTransformer(code, { body: '{}', headers: {}, script }, { engine, services: { kv: store } });

    it("a config named like a transformer does not see the transformer's kv, nor the other way round", async () => {
      const shared = uniq('orders');
      await transformer(shared, `kv.set('seen', 'transformer')`);
      expect(await delivery(shared, `request.body = tostring(kv.get('seen'))`)).toBe('nil');
      await delivery(shared, `kv.set('seen', 'config')`);
      await transformer(shared, `assert(kv.get('seen') == 'transformer', 'transformer kv changed: ' .. tostring(kv.get('seen')))`);
      expect(await delivery(shared, `request.body = tostring(kv.get('seen'))`)).toBe('config');
    });

    it('a child config neither reads nor overwrites its parent\'s kv (wh:42 + "k" vs wh + "42:k")', async () => {
      const parent = uniq('wh');
      await delivery(parent, `kv.set('42:k', 'parent')`);
      expect(await delivery(`${parent}:42`, `request.body = tostring(kv.get('k'))`)).toBe('nil');
      await delivery(`${parent}:42`, `kv.set('k', 'child')`);
      expect(await delivery(parent, `request.body = tostring(kv.get('42:k'))`)).toBe('parent');
      expect(await delivery(`${parent}:42`, `request.body = tostring(kv.get('k'))`)).toBe('child');
      await delivery(`${parent}:42`, `kv.del('k')`);
      expect(await delivery(parent, `request.body = tostring(kv.get('42:k'))`)).toBe('parent');
    });

    it('configs whose ids join to the same text stay apart (tenantA:x + "k" vs tenantA + "x:k")', async () => {
      const t = uniq('tenantA');
      await delivery(`${t}:x`, `kv.set('k', 'x')`);
      expect(await delivery(t, `request.body = tostring(kv.get('x:k'))`)).toBe('nil');
    });
  });
};
