import bundle from 'howk-transformers';
import { parseBundle, type Transformer } from './bundle';

// The transformers of this deployment, checked once per isolate.
let loaded: Map<string, Transformer> | undefined;
export const bundledTransformers = (): Map<string, Transformer> => (loaded ??= parseBundle(bundle));
