import { readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

// The Lab runs in a browser bundle: everything core/lab loads at run time (type-only
// imports aside) must be core/ code without packages, so it brings no zod, wasmoon or
// runtime module with it.

const ROOT = resolve(__dirname, '../..');

const runtimeImports = (file: string): string[] => {
  const src = readFileSync(file, 'utf8');
  const out: string[] = [];
  for (const m of src.matchAll(/^(?:import|export)\s+(type\s+)?[^;]*?from\s+'([^']+)'/gms)) if (!m[1]) out.push(m[2]!);
  return out;
};

describe('core/lab imports', () => {
  it('loads only package-free core/ modules at run time', () => {
    const seen = new Set<string>();
    const packages: string[] = [];
    const visit = (file: string) => {
      if (seen.has(file)) return;
      seen.add(file);
      for (const spec of runtimeImports(file)) {
        if (!spec.startsWith('.')) packages.push(`${relative(ROOT, file)} → ${spec}`);
        else visit(join(dirname(file), `${spec}.ts`).replace(/\/index\.ts\.ts$/, '/index.ts'));
      }
    };
    visit(join(ROOT, 'core/lab/index.ts'));
    expect(packages).toEqual([]);
    const files = [...seen].map((f) => relative(ROOT, f));
    expect(files.every((f) => f.startsWith('core/'))).toBe(true);
    // The policy modules the workers run are among them.
    expect(files).toEqual(
      expect.arrayContaining(['core/policy/retry.ts', 'core/policy/classify.ts', 'core/policy/circuit.ts', 'core/policy/token-bucket.ts', 'core/signing/outbound.ts']),
    );
  });
});
