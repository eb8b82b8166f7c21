import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import { buildConnector } from 'undici';
import { checkAddress, type DestinationPolicy } from '../../core/security/destination';

// The SSRF guard on the Node side. A connection is only ever opened to an address that was
// checked: IP-literal hosts are checked before connecting; names go through `guardedLookup`,
// which resolves once, drops every refused address and hands net.connect only the survivors
// (no second resolution between the check and the connect, so DNS rebinding cannot slip in).

export const BLOCKED_CODE = 'HOWK_BLOCKED_DESTINATION';

export type BlockedError = Error & { code: typeof BLOCKED_CODE };

const blocked = (message: string): BlockedError => Object.assign(new Error(message), { code: BLOCKED_CODE as typeof BLOCKED_CODE });

export const isBlockedError = (e: unknown): e is BlockedError => (e as { code?: unknown } | null)?.code === BLOCKED_CODE;

type Resolve = (host: string, cb: (err: NodeJS.ErrnoException | null, addrs: LookupAddress[]) => void) => void;

const systemResolve: Resolve = (host, cb) => dnsLookup(host, { all: true, verbatim: true }, cb);

/** A `lookup` for net/tls.connect that only ever returns allowed addresses. */
export const guardedLookup = (policy: DestinationPolicy, resolve: Resolve = systemResolve): LookupFunction =>
  ((hostname: string, options: { all?: boolean; family?: number | string }, callback: (...a: unknown[]) => void) => {
    resolve(hostname, (err, addrs) => {
      if (err) return callback(err);
      const family = options.family === 4 || options.family === 'IPv4' ? 4 : options.family === 6 || options.family === 'IPv6' ? 6 : 0;
      const candidates = addrs.filter((a) => !family || a.family === family);
      const verdicts = candidates.map((a) => ({ a, v: checkAddress(a.address, policy) }));
      const ok = verdicts.filter((x) => x.v.allowed).map((x) => x.a);
      if (!ok.length) {
        const why = verdicts
          .map((x) => (x.v.allowed ? '' : x.v.reason))
          .filter(Boolean)
          .join('; ');
        return callback(blocked(`${hostname} resolves only to refused addresses: ${why || 'no address'}`));
      }
      if (options.all) callback(null, ok);
      else callback(null, ok[0]!.address, ok[0]!.family);
    });
  }) as unknown as LookupFunction;

/**
 * An undici connector that refuses forbidden destinations before any packet leaves:
 * IP literals are checked here (net.connect skips lookup for them), names in the lookup.
 */
export const guardedConnector = (policy: DestinationPolicy, opts: buildConnector.BuildOptions = {}, resolve?: Resolve): buildConnector.connector => {
  const base = buildConnector({ ...opts, lookup: guardedLookup(policy, resolve) } as buildConnector.BuildOptions);
  return (options, callback) => {
    const host = options.hostname.startsWith('[') ? options.hostname.slice(1, -1) : options.hostname;
    if (isIP(host)) {
      const v = checkAddress(host, policy);
      if (!v.allowed) {
        callback(blocked(v.reason), null);
        return;
      }
    }
    base(options, callback);
  };
};
