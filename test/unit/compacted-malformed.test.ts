import { describe, expect, it } from 'vitest';
import { AppTable } from '../../core/apps/table';
import { createGuardFold } from '../../core/reconcile/guard-replay';
import { createStateFold } from '../../core/reconcile/replay';
import { ScriptTable } from '../../core/scripts/store';
import { KeyTable, hashToken } from '../../core/security/api-keys';
import { ConfigSecretTable } from '../../core/security/config-secrets';
import { T0, hook, snapshot, stamp } from '../helpers/reconcile-fixtures';

// One rule on every compacted topic (docs/ARCHITECTURE.md, "Compacted topics: one table"): a
// malformed record leaves the key's row as its last good record made it. Before, howk.keys
// deleted the key, howk.guards dropped the pause, and howk.config-secrets threw out of the table.

const MALFORMED = ['{not json', JSON.stringify({ unrelated: true })];

describe('a malformed record on each compacted topic', () => {
  it.each(MALFORMED)('howk.keys: the key still verifies as its last good record says (%s)', async (bad) => {
    const t = new KeyTable();
    const id = '0123456789abcdef';
    const token = `howk_${id}_${'x'.repeat(43)}`;
    t.apply(id, JSON.stringify({ id, name: 'ci', hash: await hashToken(token), scopes: ['read'], config_ids: null, created_at: 'x', revoked_at: null }));
    t.apply(id, bad);
    expect((await t.verify(token))?.name).toBe('ci');
    expect(t.list().map((k) => k.id)).toEqual([id]);
  });

  it.each(MALFORMED)('howk.config-secrets: the config keeps its secrets (%s)', (bad) => {
    const t = new ConfigSecretTable();
    const good = { config_id: 'c1', secrets: [{ id: 'sec_1', sealed: 'enc:v1:k:iv:ct', created_at: '2026-01-01T00:00:00.000Z', expires_at: null }], updated_at: 'x' };
    t.apply('c1', JSON.stringify(good));
    t.apply('c1', bad);
    expect(t.get('c1')).toEqual(good);
  });

  it.each(MALFORMED)('howk.scripts: the config keeps its script (%s)', (bad) => {
    const t = new ScriptTable();
    t.apply('c1', JSON.stringify({ config_id: 'c1', code: 'return 1', sha256: 'ab', updated_at: 'x' }));
    t.apply('c1', bad);
    expect(t.get('c1')?.code).toBe('return 1');
  });

  it.each(MALFORMED)('howk.applications: the application stays (%s)', (bad) => {
    const t = new AppTable(10);
    t.apply('app/app_1', JSON.stringify({ kind: 'app', id: 'app_1', uid: null, name: 'acme', metadata: {}, throttle_rate: null, created_at: 'x', updated_at: 'x' }));
    t.apply('app/app_1', bad);
    expect(t.app('app_1')?.name).toBe('acme');
  });

  it.each(MALFORMED)('howk.guards: the pause stays in force after a rebuild (%s)', (bad) => {
    const f = createGuardFold();
    f.add({ key: 'pause:config:c1', value: JSON.stringify({ type: 'pause', scope: 'config', id: 'c1', at: 'x' }) });
    f.add({ key: 'pause:config:c1', value: bad });
    expect(f.table().pauses).toEqual([{ kind: 'config', id: 'c1' }]);
    expect(f.table().skipped).toBe(1);
  });

  it.each(MALFORMED)('howk.state: the webhook is still restored by a rebuild (%s)', (bad) => {
    const f = createStateFold();
    const w = hook('wh_1', { attempt: 1 });
    f.add(snapshot(w, stamp(T0)));
    f.add({ key: w.id, value: bad });
    expect(f.live().map((s) => s.webhookId)).toEqual(['wh_1']);
    expect(f.stats.skipped).toBe(1);
  });
});
