// Entry of a Lua worker thread: the TypeScript loader is registered here, because a worker
// does not inherit the loader the main thread was started with (bin/*.mjs, vitest).
import { register } from 'tsx/esm/api';

register();
await import('./worker.ts');
