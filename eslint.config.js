import tseslint from 'typescript-eslint';

// The layering rules of DESIGN.md §2: core/ is runtime-agnostic, edge/ and workers/ never import each other.
const nodeOnly = ['node:*', 'kafkajs', 'ioredis', 'undici', 'cloudflare:*', '@hono/node-server'];

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
          { group: nodeOnly, message: 'core/ uses Web APIs only (DESIGN.md §2).' },
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
