import bcrypt from 'bcryptjs';
import bundle from 'howk-transformers';
import { cachedHashVerifier } from '../../core/transformers/bcrypt-cache';
import type { TransformerRegistry, TransformerScript } from '../../core/transformers/registry';
import { secretNamesOf } from '../../core/transformers/settings';
import { parseBundle } from './bundle';

// The transformers of this deployment, checked once per isolate, and what only the edge
// supplies to core's /incoming: the bundle instead of directories, Worker secrets instead of
// the process environment. bcryptjs runs as in Node (its Node `crypto` fallback is aliased
// to a stub in wrangler.toml: workerd has Web Crypto).

let loaded: Map<string, TransformerScript> | undefined;
export const bundledTransformers = (): Map<string, TransformerScript> => (loaded ??= parseBundle(bundle));

export const edgeTransformers = (env: Record<string, unknown>): TransformerRegistry => {
  const scripts = bundledTransformers();
  return {
    get: (name) => scripts.get(name),
    names: () => [...scripts.keys()],
    verifyHash: cachedHashVerifier((password, hash) => bcrypt.compare(password, hash)),
    secret: (name) => {
      const v = env[name];
      return typeof v === 'string' ? v : undefined;
    },
  };
};

/** The Worker secrets the bundled transformers name (Basic auth, inbound signatures). */
export const transformerSecretNames = (): string[] => [...bundledTransformers().values()].flatMap((t) => secretNamesOf(t.settings));
