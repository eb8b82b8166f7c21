import { readdirSync } from 'node:fs';
import tseslint from 'typescript-eslint';

// The layering rules (docs/ARCHITECTURE.md, Layout): core/ is runtime-agnostic, edge/ and
// workers/ never import each other, and core/'s folders stand in layers.
const nodeOnly = ['node:*', 'kafkajs', 'ioredis', 'undici', 'cloudflare:*', '@hono/node-server', 'prom-client'];
const coreBase = [
  { group: nodeOnly, message: 'core/ uses Web APIs only: it runs in Node and in workerd alike (docs/ARCHITECTURE.md, Layout).' },
  { group: ['**/edge/**', '**/workers/**'], message: 'core/ imports nothing from edge/ or workers/.' },
];

// core/'s layers, lowest first. The model and its pure decisions name exactly what each may
// import besides itself (CORE_MAY_IMPORT). Above them every folder stands in one order
// (CORE_ORDER): it imports only the folders before it, so no two folders can import each
// other, even through a third. core/http (the top) and core/memory (in-memory adapters, wired
// by hosts and tests) are imported by no other folder. A new folder has no place until it is
// given one here: every import of another folder from it is refused.
const CORE_MAY_IMPORT = {
  errors: [],
  domain: ['errors'],
  policy: ['errors', 'domain'],
  ports: ['errors', 'domain', 'policy'],
  records: ['errors', 'domain', 'policy'],
};
const CORE_ORDER = [
  ...Object.keys(CORE_MAY_IMPORT),
  'signing',
  'lua',
  'config',
  'log',
  'security',
  'metrics',
  'live',
  'transformers',
  'scripts',
  'apps',
  'pipeline',
  'reconcile',
  'lab',
  'memory',
  'http',
];
const CORE_TOPS = {
  http: 'core/http is the top of core/: no other core/ folder imports it (docs/ARCHITECTURE.md, Layout).',
  memory: 'core/memory holds in-memory adapters for hosts and tests to wire: no other core/ folder imports it (docs/ARCHITECTURE.md, Layout).',
};
const coreFolders = readdirSync(new URL('./core', import.meta.url), { withFileTypes: true })
  .filter((d) => d.isDirectory())
  .map((d) => d.name);
const layerPatterns = (folder, up) => {
  const to = (names) => ({ regex: `^(\\.\\./){${up}}(${names.join('|')})(/|$)` });
  const place = CORE_ORDER.indexOf(folder);
  const may = CORE_MAY_IMPORT[folder] ?? CORE_ORDER.slice(0, Math.max(0, place)).filter((f) => !(f in CORE_TOPS));
  const denied = coreFolders.filter((f) => f !== folder && !may.includes(f));
  const tops = denied.filter((f) => f in CORE_TOPS && !(folder in CORE_MAY_IMPORT));
  const rest = denied.filter((f) => !tops.includes(f));
  const allowed = CORE_MAY_IMPORT[folder]
    ? `only ${may.length ? may.map((f) => `core/${f}`).join(', ') : 'nothing'}`
    : place < 0
      ? 'nothing (it has no place in CORE_ORDER yet)'
      : 'only the folders before it in CORE_ORDER';
  return [
    ...tops.map((top) => ({ ...to([top]), message: CORE_TOPS[top] })),
    ...(rest.length ? [{ ...to(rest), message: `core/${folder} imports ${allowed} from the rest of core/ (docs/ARCHITECTURE.md, Layers inside core/).` }] : []),
  ];
};
// One block per depth, up to three folders deep (core/http/routes/x.ts is two), so that
// `../x` always reads as the folder it names from there.
const coreLayers = coreFolders.flatMap((folder) =>
  [1, 2, 3].map((up) => ({
    files: [`core/${folder}/${'*/'.repeat(up - 1)}*.ts`],
    rules: { 'no-restricted-imports': ['error', { patterns: [...coreBase, ...layerPatterns(folder, up)] }] },
  })),
);

/** Each adapter's engine: only that adapter's folder imports it. */
const ENGINES = { kafka: ['kafkajs'], redis: ['ioredis'], sqlite: ['better-sqlite3'] };
const engineImports = (own) =>
  Object.entries(ENGINES)
    .filter(([adapter]) => adapter !== own)
    .flatMap(([adapter, names]) =>
      names.map((name) => ({ name, message: `${name} is the engine of workers/${adapter}: only that adapter imports it; hosts are handed what it makes.` })),
    );
const noEdge = { group: ['**/edge/**'], message: 'workers/ never imports edge/.' };

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
  // Functions stay short enough to read at once (tests excepted: a describe block is a list).
  {
    files: ['core/**/*.ts', 'workers/**/*.ts', 'edge/**/*.ts', 'console/**/*.{ts,tsx}', 'scripts/**/*.ts'],
    rules: { 'max-lines-per-function': ['error', { max: 100, skipBlankLines: true, skipComments: true, IIFEs: true }] },
  },
  {
    files: ['core/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: coreBase }],
      'no-restricted-globals': ['error', 'process', 'Buffer', 'require', '__dirname'],
    },
  },
  // After the block above: each layer block repeats coreBase, since a later block's options
  // replace an earlier one's for the same rule.
  ...coreLayers,
  {
    // The console renders API data as text nodes only (docs/CONSOLE.md) and runs in a browser.
    files: ['console/**/*.{ts,tsx}'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ group: [...nodeOnly, '**/workers/**', '**/edge/**', 'wasmoon'], message: 'console/ is a browser bundle: Web APIs and core/ only.' }] },
      ],
      'no-restricted-syntax': [
        'error',
        { selector: "JSXAttribute[name.name='dangerouslySetInnerHTML']", message: 'Render data as text: no dangerouslySetInnerHTML.' },
        { selector: 'MemberExpression[property.name=/^(innerHTML|outerHTML|insertAdjacentHTML|write|writeln)$/]', message: 'Render data as text: no HTML strings.' },
      ],
    },
  },
  {
    files: ['edge/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [{ group: ['**/workers/**'], message: 'edge/ never imports workers/.' }] }] },
  },
  {
    // A host (api, bridge, cli, dev, node, …) is handed what an adapter makes: it never imports an engine.
    files: ['workers/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { paths: engineImports(), patterns: [noEdge] }] },
  },
  // The adapters implement core's ports on one engine each and know nothing of the hosts that
  // wire them, nor of each other's engine (docs/ARCHITECTURE.md, Layout).
  ...Object.keys(ENGINES).map((adapter) => ({
    files: [`workers/${adapter}/**/*.ts`],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: engineImports(adapter),
          patterns: [
            noEdge,
            {
              regex: '^\\.\\./(api|bridge|cli|dev|node|reconciler|scheduler|worker|kafka|redis|sqlite)(/|$)',
              message: 'An adapter (workers/kafka, redis, sqlite) imports core/ and its own folder only: the hosts wire adapters, not the other way round.',
            },
          ],
        },
      ],
    },
  })),
);
