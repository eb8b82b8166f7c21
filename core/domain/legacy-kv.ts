import { keys, type KvScope } from './keys';

// Lua kv keys written before owners were tagged were `kv:<owner>:<key>`, the owner a
// transformer name or a config id, both of which may hold ':' (config ids) or be equal to
// one another. The old key alone does not say whose it is; it is attributed only when
// exactly one known owner fits it, and left for the operator otherwise.

export type KvOwners = { transformers: ReadonlySet<string>; configs: ReadonlySet<string> };

export type LegacyKvPlan =
  | { kind: 'move'; scope: KvScope; key: string; to: string }
  /** Several known owners fit (`kv:wh:42:k`: config wh:42's "k" or wh's "42:k"). */
  | { kind: 'ambiguous'; candidates: KvScope[] }
  /** No known owner fits. */
  | { kind: 'unowned' };

/** A key in the tagged shape (keys.kv), which the migration leaves alone. */
export const isTaggedKv = (key: string): boolean => /^kv:[tc]:\{[^{}]*\}:/.test(key);

export const planLegacyKv = (oldKey: string, owners: KvOwners): LegacyKvPlan => {
  const rest = oldKey.slice('kv:'.length);
  const fits: { scope: KvScope; key: string }[] = [];
  for (let i = rest.indexOf(':'); i > 0 && i < rest.length - 1; i = rest.indexOf(':', i + 1)) {
    const owner = rest.slice(0, i);
    const key = rest.slice(i + 1);
    if (owners.transformers.has(owner)) fits.push({ scope: { kind: 'transformer', id: owner }, key });
    if (owners.configs.has(owner)) fits.push({ scope: { kind: 'config', id: owner }, key });
  }
  if (fits.length === 0) return { kind: 'unowned' };
  if (fits.length > 1) return { kind: 'ambiguous', candidates: fits.map((f) => f.scope) };
  const [{ scope, key }] = fits as [{ scope: KvScope; key: string }];
  return { kind: 'move', scope, key, to: keys.kv(scope, key) };
};
