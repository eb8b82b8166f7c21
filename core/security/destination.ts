import { ValidationError } from '../errors/errors';
import { classifyIp, embeddedIpv4, formatIp, parseIp, prefixMatch, type AddressCategory, type Ip } from './address';

// The delivery destination policy: public addresses pass, everything else is refused unless
// `delivery.allowed_networks` opens its range. Metadata addresses are special: only an
// allow-list entry naming that very address (a /32 or /128) opens one, so that a broad
// entry such as 169.254.0.0/16 or 0.0.0.0/0 never exposes instance credentials.

export type Cidr = { ip: Ip; prefix: number; text: string };

export type DestinationPolicy = { allowed: readonly Cidr[] };

export type Verdict = { allowed: true; category: AddressCategory; address: string } | { allowed: false; category: AddressCategory; address: string; reason: string };

export const parseCidr = (text: string): Cidr => {
  const t = text.trim();
  const slash = t.lastIndexOf('/');
  const ip = parseIp(slash >= 0 ? t.slice(0, slash) : t);
  if (!ip) throw new ValidationError(`not a CIDR range: ${JSON.stringify(text)}`, 'delivery.allowed_networks');
  const max = ip.version === 4 ? 32 : 128;
  const rawPrefix = slash >= 0 ? t.slice(slash + 1) : String(max);
  const prefix = /^\d{1,3}$/.test(rawPrefix) ? Number(rawPrefix) : NaN;
  if (!(prefix >= 0 && prefix <= max)) throw new ValidationError(`bad prefix length in ${JSON.stringify(text)}`, 'delivery.allowed_networks');
  return { ip, prefix, text: t };
};

export const destinationPolicy = (allowedNetworks: readonly string[] = []): DestinationPolicy => ({ allowed: allowedNetworks.map(parseCidr) });

/** The loopback ranges, for howk-dev and tests that deliver to a local receiver. */
export const LOOPBACK_NETWORKS = ['127.0.0.0/8', '::1/128'] as const;

const inCidr = (ip: Ip, c: Cidr): boolean => c.ip.version === ip.version && prefixMatch(ip.bytes, c.ip.bytes, c.prefix);

const isAllowListed = (ip: Ip, category: AddressCategory, p: DestinationPolicy): boolean => {
  // An IPv6 form of an IPv4 address (::ffff:127.0.0.1) is allowed by the IPv4 range too.
  const forms = [ip, embeddedIpv4(ip)].filter((x): x is Ip => x !== null);
  return p.allowed.some((c) => forms.some((f) => inCidr(f, c) && (category !== 'metadata' || c.prefix === (f.version === 4 ? 32 : 128))));
};

/** Whether a delivery may connect to this (resolved or literal) address. */
export const checkAddress = (address: string | Ip, p: DestinationPolicy): Verdict => {
  const ip = typeof address === 'string' ? parseIp(address) : address;
  const shown = typeof address === 'string' ? address : formatIp(address);
  if (!ip) return { allowed: false, category: 'reserved', address: shown, reason: `${shown} is not an IP address` };
  const category = classifyIp(ip);
  if (category === 'public' || isAllowListed(ip, category, p)) return { allowed: true, category, address: shown };
  return { allowed: false, category, address: shown, reason: `${shown} is refused: ${category.replace('_', '-')} address, not in delivery.allowed_networks` };
};

export type EndpointHost = { kind: 'ip'; ip: Ip; host: string } | { kind: 'name'; host: string };

/**
 * The host of an endpoint after WHATWG URL normalization, which turns every numeric form
 * (2130706433, 0x7f000001, 0177.0.0.1, 127.1) into a dotted quad and brackets IPv6.
 */
export const endpointHost = (url: string): EndpointHost | null => {
  let host: string;
  try {
    host = new URL(url).hostname;
  } catch {
    return null;
  }
  const ip = parseIp(host);
  if (ip) return { kind: 'ip', ip, host };
  // A trailing dot is the same name; lower-case for the checks that compare names.
  return { kind: 'name', host: host.replace(/\.$/, '').toLowerCase() };
};

/**
 * The verdict for an endpoint URL before any DNS: IP-literal hosts are decided here; a name
 * is 'resolve' (the Node connector checks every address it resolves to before connecting).
 */
export const checkEndpoint = (url: string, p: DestinationPolicy): Verdict | 'resolve' => {
  const h = endpointHost(url);
  if (!h) return { allowed: false, category: 'reserved', address: url, reason: 'endpoint is not a valid URL' };
  return h.kind === 'ip' ? checkAddress(h.host, p) : 'resolve';
};
