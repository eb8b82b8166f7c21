import { scriptFromFiles, type TransformerScript } from '../../core/transformers/registry';

// Transformers as the edge bundles them at build time (scripts/edge-transformers.ts): the
// texts of `name.lua` and the optional `name.json` and `name.passwd`, read as howk-api reads
// them (core/transformers: one name.json schema, one passwd format). Secrets are never
// bundled: name.json names Worker secrets, read from env per request.

export type BundledTransformer = { name: string; code: string; json: string | null; passwd: string | null };
export type TransformerBundle = { transformers: BundledTransformer[] };

/**
 * Validates a bundle (also used by the bundler, so that a bad name.json or passwd file fails
 * the build instead of a request).
 */
export const parseBundle = (b: TransformerBundle): Map<string, TransformerScript> =>
  new Map(
    b.transformers.map((t) => {
      let script: TransformerScript;
      try {
        script = scriptFromFiles(t, (reason) => {
          throw new Error(`${t.name}.passwd: ${reason}`);
        });
      } catch (e) {
        throw new Error(`transformer ${t.name}: ${(e as Error).message}`);
      }
      return [t.name, script];
    }),
  );
