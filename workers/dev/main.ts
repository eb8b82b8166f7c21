import { MemoryGuards } from '../../core/memory/guards';
import { MemoryHotState } from '../../core/memory/hot-state';
import { MemoryLog } from '../../core/memory/log';
import { createLogger } from '../../core/ports/logger';
import { systemClock } from '../../core/ports/clock';
import { toBase64 } from '../../core/signing/encoding';
import { createSecretBox, randomSecretsKey } from '../../core/signing/secret-box';
import { LOOPBACK_NETWORKS } from '../../core/security/destination';
import { loadProcessConfig, parseFlags } from '../node/config';
import { startFleet } from '../node/fleet';
import { onReload, onShutdown } from '../node/lifecycle';
import { createDryRunSender, createHttpSender } from '../node/sender';

// howk-dev: the whole pipeline in one process, with the in-memory log and hot state.
// Nothing persists; deliveries are real HTTP unless --dry.
const flags = parseFlags(process.argv.slice(2));
const generatedSecret = `whsec_${toBase64(crypto.getRandomValues(new Uint8Array(24)))}`;
// howk-dev's own defaults, for local development: no API keys, and loopback receivers are
// reachable. Either gives way to the YAML file or HOWK_* variable that sets it.
const { config, sources } = loadProcessConfig(flags);
if (!sources['api.auth.enabled']) config.api.auth.enabled = false;
if (!sources['delivery.allowed_networks']) config.delivery.allowed_networks = [...LOOPBACK_NETWORKS];
if (!config.signing.default_secret) config.signing.default_secret = generatedSecret;
const log = createLogger('howk-dev', config.log.level);
const secretBox = await createSecretBox(config.signing.secrets_key_id, { [config.signing.secrets_key_id]: config.signing.secrets_key ?? randomSecretsKey() });
const sender = config.worker.dry_run
  ? createDryRunSender(log)
  : createHttpSender({ connectionsPerOrigin: config.delivery.max_conns_per_host, snippetBytes: config.delivery.response_snippet_bytes, allowedNetworks: config.delivery.allowed_networks });
const logStore = new MemoryLog();
const hot = new MemoryHotState({ status_ttl: config.ttl.status_ttl, stats_ttl: config.ttl.stats_ttl, retry_data_ttl: config.ttl.retry_data_ttl }, systemClock);
const fleet = await startFleet({ config, logStore, hot, sender, log, secretBox, guards: new MemoryGuards(), scriptDirs: flags['scripts-dir'] ? [flags['scripts-dir']] : [] });
if (fleet.transformers) onReload(log, fleet.transformers.reload);

// With api.auth.enabled, howk-dev makes an admin key for the run (nothing persists, so
// there is no other way in) and prints it, like the signing secret.
let adminKey: string | undefined;
if (config.api.auth.enabled && fleet.security?.keys) {
  await fleet.security.ready;
  adminKey = (await fleet.security.keys.create({ name: 'howk-dev', scopes: ['admin'] })).key;
}

log.info('howk-dev ready', {
  url: fleet.baseUrl?.replace('127.0.0.1', config.api.host === '0.0.0.0' ? 'localhost' : config.api.host),
  console: `${fleet.baseUrl?.replace('127.0.0.1', config.api.host === '0.0.0.0' ? 'localhost' : config.api.host)}/console (and /lab)`,
  mode: config.worker.dry_run ? 'dry-run (no HTTP)' : 'live HTTP delivery',
  storage: 'in-memory log and hot state (nothing persists)',
  allowed_networks: config.delivery.allowed_networks.length
    ? `${config.delivery.allowed_networks.join(',')} reachable besides public addresses (howk-dev allows loopback by default; other binaries refuse it)`
    : 'public addresses only',
  api_auth: adminKey ? `on; admin key for this run: ${adminKey}` : 'off (howk-dev default; HOWK_API_AUTH_ENABLED=true turns it on)',
  transformers: fleet.transformers?.names().length ? fleet.transformers.names().map((n) => `/incoming/${n}`).join(', ') : 'none (--scripts-dir DIR or transformer.script_dirs)',
  signing_secret: config.signing.default_secret === generatedSecret ? `${generatedSecret} (generated for this run; set HOWK_SIGNING_DEFAULT_SECRET to fix it)` : '(from config)',
});
onShutdown(log, async () => {
  await fleet.stop();
  await sender.close();
});
