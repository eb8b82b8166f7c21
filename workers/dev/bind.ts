import { devAllowedHosts } from '../../core/http/middleware/browsers';
import type { AddressInfo } from 'node:net';
import type { ConfigSource } from '../../core/config/load';
import type { Config } from '../../core/config/schema';
import type { Logger } from '../../core/ports/logger';
import { classifyIp, isLoopbackHost, parseIp, unbracketHost } from '../../core/security/address';
import { checkAddress, destinationPolicy, LOOPBACK_NETWORKS } from '../../core/security/destination';
import type { KeyService } from '../../core/security/key-service';

// Who can reach howk-dev, and what they may do there (docs/SECURITY.md, "The dev server:
// safe where it runs"). Its local-development defaults (no API keys, loopback receivers
// reachable) are only safe while nobody else can connect, so it listens on loopback unless
// told otherwise, and refuses an open address with keys off unless that is said explicitly.

/** Where howk-dev listens when neither a flag, the environment nor the file says. */
export const DEV_HOST = '127.0.0.1';

/** The flag that lets howk-dev listen beyond loopback with API keys off. */
export const INSECURE_OPEN_FLAG = '--insecure-open';

export type BindArgs = { rest: string[]; insecureOpen: boolean };

/** Takes --insecure-open out of argv; the rest go on to the common parser. */
export const parseBindArgs = (argv: string[]): BindArgs => ({
  rest: argv.filter((a) => a !== INSECURE_OPEN_FLAG),
  insecureOpen: argv.includes(INSECURE_OPEN_FLAG),
});

/** howk-dev's own defaults, each applied only when no file, variable or flag sets the key. */
export const applyDevDefaults = (config: Config, sources: Record<string, ConfigSource>): void => {
  if (!sources['api.host']) config.api.host = DEV_HOST;
  if (!sources['api.auth.enabled']) config.api.auth.enabled = false;
  if (!sources['delivery.allowed_networks']) config.delivery.allowed_networks = [...LOOPBACK_NETWORKS];
  // After the host is known: on loopback, only loopback names (no DNS-rebound Host).
  if (!sources['api.allowed_hosts']) config.api.allowed_hosts = devAllowedHosts(config.api.host);
};

const isWildcard = (host: string): boolean => {
  const ip = parseIp(unbracketHost(host));
  return ip !== null && classifyIp(ip) === 'unspecified';
};

/** Why howk-dev must not start with this config (one line for stderr), or undefined. */
export const bindRefusal = (config: Config, insecureOpen: boolean): string | undefined => {
  const host = config.api.host;
  if (isLoopbackHost(host) || config.api.auth.enabled || insecureOpen) return undefined;
  return (
    `refusing to listen on ${host} with API keys off: anyone who can reach it could enqueue webhooks to this machine's ` +
    `loopback services, read every payload and upload Lua. Listen on loopback (--host 127.0.0.1, the default), turn keys on ` +
    `(HOWK_API_AUTH_ENABLED=true: an admin key is printed), or pass ${INSECURE_OPEN_FLAG} to accept an open server`
  );
};

const urlHost = (address: string): string => (address.includes(':') ? `[${address}]` : address);

export type Exposure = {
  listening_on: string;
  reachable_from: string;
  console: string;
  api_auth: string;
  loopback_destinations: string;
};

/** What the banner says about who can connect and what is open to them. */
export const describeExposure = (config: Config, address: AddressInfo, adminKey: string | undefined): Exposure => {
  const host = address.address;
  const listening = `http://${urlHost(host)}:${address.port}`;
  const loopback = isLoopbackHost(host);
  const wildcard = isWildcard(host);
  // A browser on this machine reaches a wildcard listener on loopback.
  const local = wildcard ? `http://127.0.0.1:${address.port}` : listening;
  const auth = adminKey
    ? `on; admin key for this run: ${adminKey}`
    : config.api.auth.enabled
      ? 'on'
      : loopback
        ? 'off (howk-dev default on loopback; HOWK_API_AUTH_ENABLED=true turns it on)'
        : `OFF on an open address (${INSECURE_OPEN_FLAG}): whoever connects may enqueue, read every payload and upload Lua`;
  const toLoopback = checkAddress('127.0.0.1', destinationPolicy(config.delivery.allowed_networks)).allowed;
  return {
    listening_on: listening,
    reachable_from: loopback
      ? 'this machine only (loopback; --host ADDRESS to change)'
      : wildcard
        ? 'every network interface: other machines can connect'
        : `whoever can reach ${host}`,
    console: `${local}/console (and /lab)`,
    api_auth: auth,
    loopback_destinations: toLoopback
      ? `reachable: webhooks may be sent to this machine's own services (${config.delivery.allowed_networks.join(',')} allowed besides public addresses; howk-dev's default, the other binaries refuse it)`
      : config.delivery.allowed_networks.length
        ? `refused (${config.delivery.allowed_networks.join(',')} allowed besides public addresses)`
        : 'refused (public addresses only)',
  };
};

/**
 * With API keys on, an admin key for this run (printed, like the signing secret). Keys made
 * before stay valid: they are named, so that unknown ones can be revoked.
 */
export const devAdminKey = async (keys: KeyService, log: Logger): Promise<string> => {
  const earlier = keys.list().filter((k) => k.revoked_at === null);
  if (earlier.length) {
    log.warn('API keys made before this run are live: GET /keys lists them, DELETE /keys/:id revokes any you do not know', {
      count: earlier.length,
      newest: earlier.slice(-10).map((k) => `${k.id} (${k.name}, ${k.scopes.join('+')}, ${k.created_at})`),
    });
  }
  return (await keys.create({ name: 'howk-dev', scopes: ['admin'] })).key;
};
