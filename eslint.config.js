import tseslint from 'typescript-eslint';

// The layering rules (docs/ARCHITECTURE.md, Layout): core/ is runtime-agnostic, edge/ and
// workers/ never import each other.
const nodeOnly = ['node:*', 'kafkajs', 'ioredis', 'undici', 'cloudflare:*', '@hono/node-server', 'prom-client'];

export default tseslint.config(
  { ignores: ['node_modules/**', 'dist/**', '.wrangler/**', '.tmp/**'] },
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/consistent-type-definitions': ['error', 'type'],
    },
  },
  {
    files: ['core/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        patterns: [
          { group: nodeOnly, message: 'core/ uses Web APIs only: it runs in Node and in workerd alike (docs/ARCHITECTURE.md, Layout).' },
          { group: ['**/edge/**', '**/workers/**'], message: 'core/ imports nothing from edge/ or workers/.' },
        ],
      }],
      'no-restricted-globals': ['error', 'process', 'Buffer', 'require', '__dirname'],
    },
  },
  {
    files: ['edge/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [{ group: ['**/workers/**'], message: 'edge/ never imports workers/.' }] }] },
  },
  {
    files: ['workers/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [{ group: ['**/edge/**'], message: 'workers/ never imports edge/.' }] }] },
  },
);
