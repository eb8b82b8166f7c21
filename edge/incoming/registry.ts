import bundle from 'howk-transformers';
import { parseBundle, type Transformer } from './bundle';

// The transformers of this deployment, checked once per isolate.
let loaded: Map<string, Transformer> | undefined;
export const bundledTransformers = (): Map<string, Transformer> => (loaded ??= parseBundle(bundle));

/** The Worker secrets the bundled transformers name (Basic auth, inbound signatures). */
export const transformerSecretNames = (): string[] =>
  [...bundledTransformers().values()].flatMap((t) => [...(t.config.basic_auth_secret ? [t.config.basic_auth_secret] : []), ...(t.config.verify?.secrets ?? [])]);
