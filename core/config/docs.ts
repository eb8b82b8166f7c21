import { configDocsTable } from './load';
import { REMOVED_KEYS } from './removed';

const removedList = (): string =>
  Object.entries(REMOVED_KEYS)
    .map(([key, why]) => `- \`${key}\` (\`HOWK_${key.replace(/\./g, '_').toUpperCase()}\`): ${why}.`)
    .join('\n');

/** The whole of docs/CONFIG.md; a unit test keeps the committed file equal to it. */
export const configDocsMarkdown = (): string => `# Configuration

Generated from \`core/config/schema.ts\` by \`npm run docs:config\`; do not edit by hand.

One schema configures every process: howk-api, howk-worker, howk-scheduler, howk-dev and
the CLI, howk-bridge (\`bridge.*\`) and the Cloudflare edge Worker (\`edge.*\`, read from its
Worker vars and secrets with the same rules). Every key can be set three ways, later ones winning:

1. the default below;
2. a YAML file passed with \`--config path.yaml\` (nested keys, e.g. \`retry:\\n  base_delay: 5s\`);
3. the environment variable in the \`env\` column (\`HOWK_<SECTION>_<KEY>\` unless noted);
4. command-line flags where they exist (\`--port\`, \`--host\`, \`--dry\`).

Durations accept \`250ms\`, \`10s\`, \`2m\`, \`168h\`, \`1h30m\` or a number of milliseconds. Lists are comma-separated in the environment; maps are JSON (\`{"api.stripe.com":200}\`) or \`host:n,host:n\`.

Notes:

- A setting that is not in the table is refused at start-up with its name: a key of the
  config file, or a \`HOWK_<SECTION>_*\` variable whose section is one of the table's
  (\`HOWK_RETRY_MAX_ATEMPTS\` stops the process instead of leaving the default in force).
  Variables outside those prefixes are not judged, nor \`HOWK_LUA_CRYPTO_<ID>\` keys,
  variables listed in \`lua.secret_env_allowlist\`, or the Worker secrets a bundled
  transformer names.
- A former variable name (noted in the description) is still read. Set either name, not
  both: both set to different values is refused.
- howk-dev has three defaults of its own, each applied only when neither the file, the
  environment nor a flag sets the key: \`api.host\` 127.0.0.1, \`api.auth.enabled\` false and
  \`delivery.allowed_networks\` loopback. On an address other than loopback it refuses to start
  with \`api.auth.enabled\` false unless given \`--insecure-open\` (docs/SECURITY.md, "The dev
  server: safe where it runs").
- \`kafka.partitions\`, \`kafka.replication_factor\` and \`kafka.retention\` are applied when a
  process creates a topic that does not exist yet; an existing topic keeps what it has.
  \`howk topics migrate\` raises partitions and sets retention and compaction of existing topics
  to the config (partitions can only grow; docs/OPERATIONS.md, "Kafka topics").
- \`.env.example\` lists every variable below with its default (generated with this file).
- Secrets (\`(secret: never logged)\`) belong in the environment (Worker secrets at the edge),
  not in a file under version control.

Removed keys, refused with the reason wherever they are set:

${removedList()}

${configDocsTable()}
`;
