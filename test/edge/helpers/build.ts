import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { edgeBundleDir, root } from './paths';

// Vitest globalSetup of the edge project: builds the Worker once, with wrangler itself
// (`wrangler deploy --dry-run`), so that the tests run the very bundle a deploy would upload.
export default function setup(): void {
  const t0 = Date.now();
  const res = spawnSync(join(root, 'node_modules', '.bin', 'wrangler'), ['deploy', '--dry-run', '--env', '', '--outdir', edgeBundleDir], {
    cwd: root,
    // The test transformers are bundled in, as `transformer.script_dirs` would be in a deploy.
    env: { ...process.env, WRANGLER_SEND_METRICS: 'false', WRANGLER_LOG: 'warn', HOWK_TRANSFORMER_SCRIPT_DIRS: 'test/edge/fixtures/transformers' },
    encoding: 'utf8',
  });
  if (res.status !== 0 || !existsSync(join(edgeBundleDir, 'worker.js'))) throw new Error(`wrangler build of the edge failed:\n${res.stdout}\n${res.stderr}`);
  console.log(`[edge] built the Worker with wrangler in ${Date.now() - t0} ms`);
}
