import { MemoryGuards } from '../../core/memory/guards';
import { MemoryHotState } from '../../core/memory/hot-state';
import { startSweeping } from '../../core/memory/sweep';
import { createLogger } from '../../core/ports/logger';
import { systemClock } from '../../core/ports/clock';
import { createSecretBox } from '../../core/signing/secret-box';
import type { AddressInfo } from 'node:net';
import { loadProcessConfig, parseFlags } from '../node/config';
import { startFleet } from '../node/fleet';
import { onReload, onShutdown } from '../node/lifecycle';
import { senderFrom } from '../node/sender';
import { applyDevDefaults, bindRefusal, describeExposure, devAdminKey, parseBindArgs } from './bind';
import { openDevStorage, parseDevArgs } from './storage';

// howk-dev: the whole pipeline in one process. The log is a SQLite file (./.howk/howk.db,
// --data DIR) unless --memory; the hot state and guards are in memory, rebuilt from the log
// at start (docs/RELIABILITY.md, "The embedded mode"). Deliveries are real HTTP unless --dry.
const devArgs = parseDevArgs(process.argv.slice(2));
const bindArgs = parseBindArgs(devArgs.rest);
const flags = parseFlags(bindArgs.rest);
// howk-dev's own defaults, for local development: loopback only, no API keys, and loopback
// receivers are reachable. Each gives way to the file, HOWK_* variable or flag that sets it.
const { config, sources } = loadProcessConfig(flags);
applyDevDefaults(config, sources);
const refusal = bindRefusal(config, bindArgs.insecureOpen);
if (refusal) {
  console.error(`howk-dev: ${refusal}`);
  process.exit(1);
}
const storage = (() => {
  try {
    return openDevStorage(devArgs);
  } catch (e) {
    console.error(`howk-dev: ${e instanceof Error ? e.message : String(e)}`);
    process.exit(1);
  }
})();
const generatedSecret = storage.secrets.signing_secret;
if (!config.signing.default_secret) config.signing.default_secret = generatedSecret;
const log = createLogger('howk-dev', config.log.level);
if (storage.tightened.length) log.warn('data folder made private: it holds payloads and headers in clear', { changed: storage.tightened });
if (storage.persistent && !config.reconciler.enabled) {
  // The rebuild at start is how retries, parked webhooks and dead letters come back.
  log.warn('reconciler.enabled=false is ignored: howk-dev rebuilds its hot state from its log at every start');
  config.reconciler.enabled = true;
}
const secretBox = await createSecretBox(config.signing.secrets_key_id, { [config.signing.secrets_key_id]: config.signing.secrets_key ?? storage.secrets.secrets_key });
const sender = senderFrom(config, log);
const logStore = storage.logStore;
const hot = new MemoryHotState(
  { status_ttl: config.ttl.status_ttl, stats_ttl: config.ttl.stats_ttl, retry_data_ttl: config.ttl.retry_data_ttl, retry_shards: config.redis.retry_shards },
  systemClock,
);
const stopSweeping = startSweeping(hot);
const fleet = await startFleet({ config, logStore, hot, sender, log, secretBox, guards: new MemoryGuards(), scriptDirs: flags['scripts-dir'] ? [flags['scripts-dir']] : [] });
if (fleet.transformers) onReload(log, fleet.transformers.reload);

// With api.auth.enabled, howk-dev makes an admin key for the run and prints it, like the
// signing secret (keys made before persist with the log, but their secrets are not shown again).
let adminKey: string | undefined;
if (config.api.auth.enabled && fleet.security?.keys) {
  await fleet.security.ready;
  adminKey = await devAdminKey(fleet.security.keys, log);
}

log.info('howk-dev ready', {
  ...describeExposure(config, fleet.server!.address() as AddressInfo, adminKey),
  mode: config.worker.dry_run ? 'dry-run (no HTTP)' : 'live HTTP delivery',
  storage: storage.describe,
  transformers: fleet.transformers?.names().length
    ? fleet.transformers
        .names()
        .map((n) => `/incoming/${n}`)
        .join(', ')
    : 'none (--scripts-dir DIR or transformer.script_dirs)',
  signing_secret:
    config.signing.default_secret === generatedSecret
      ? `${generatedSecret} (${storage.persistent ? 'generated for this data folder' : 'generated for this run'}; set HOWK_SIGNING_DEFAULT_SECRET to fix it)`
      : '(from config)',
});
onShutdown(log, async () => {
  stopSweeping();
  await fleet.stop();
  await sender.close();
  await logStore.close();
});
