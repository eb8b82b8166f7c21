import { configDocsTable } from './load';

/** The whole of docs/CONFIG.md; a unit test keeps the committed file equal to it. */
export const configDocsMarkdown = (): string => `# Configuration

Generated from \`core/config/schema.ts\` by \`npm run docs:config\`; do not edit by hand.

Every key can be set three ways, later ones winning:

1. the default below;
2. a YAML file passed with \`--config path.yaml\` (nested keys, e.g. \`retry:\\n  base_delay: 5s\`);
3. the environment variable in the \`env\` column (\`HOWK_<SECTION>_<KEY>\` unless noted);
4. command-line flags where they exist (\`--port\`, \`--dry\`).

Durations accept \`250ms\`, \`10s\`, \`2m\`, \`168h\`, \`1h30m\` or a number of milliseconds. Lists are comma-separated in the environment; maps are JSON (\`{"api.stripe.com":200}\`) or \`host:n,host:n\`.

${configDocsTable()}
`;
