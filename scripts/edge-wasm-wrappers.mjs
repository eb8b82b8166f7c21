// Writes the prebuilt addFunction wrapper modules of the edge's Lua loader
// (edge/lua/wrappers/<sig>.wasm). Run after changing edge/lua/wrappers.ts:
//   node --import tsx scripts/edge-wasm-wrappers.mjs
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SIGNATURES, wrapperBytes } from '../edge/lua/wrappers.ts';
const root = join(dirname(fileURLToPath(import.meta.url)), '..');

for (const sig of SIGNATURES) {
  const file = join(root, 'edge', 'lua', 'wrappers', `${sig}.wasm`);
  writeFileSync(file, wrapperBytes(sig));
  console.log(`${file}: ${wrapperBytes(sig).length} bytes`);
}
