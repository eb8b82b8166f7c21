// `npm run lint` runs this after eslint (docs/ARCHITECTURE.md, Layout): no import cycle
// anywhere in the tree. `import type` counts: a type cycle is one value import away from a
// runtime one, and the layer rules (eslint.config.js) treat both kinds of import alike.
export default {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'An import cycle: move the piece both sides share down to where both can import it (docs/ARCHITECTURE.md, Layout).',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
  ],
  options: {
    doNotFollow: { path: '(^|/)node_modules/' },
    exclude: { path: '^(node_modules|dist|\\.wrangler|\\.tmp|\\.howk|infra)/' },
    // The TypeScript compiler reads the imports before `import type` is erased.
    tsPreCompilationDeps: true,
    enhancedResolveOptions: { extensions: ['.ts', '.tsx', '.mjs', '.js', '.json'] },
    // Checksums of the files, not git state: a stale cache can never hide a cycle.
    cache: { folder: 'node_modules/.cache/dependency-cruiser', strategy: 'content' },
  },
};
