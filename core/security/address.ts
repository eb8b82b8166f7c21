// IP address parsing and classification for the SSRF guard. Pure functions over bytes:
// the Node sender resolves names and asks these functions about every address it would
// connect to; tests drive them with a table of hostile targets without connecting anywhere.

export type Ip = { version: 4 | 6; bytes: Uint8Array };

/** Why an address is (not) a public destination. Only `public` is allowed by default. */
export type AddressCategory = 'public' | 'loopback' | 'private' | 'link_local' | 'cgnat' | 'multicast' | 'broadcast' | 'unspecified' | 'metadata' | 'unique_local' | 'reserved';

const V4_PART = /^(0|[1-9]\d{0,2})$/;

/** Dotted-quad decimal only: other forms (0x7f.1, 017.0.0.1, 2130706433) come from URL hosts, which WHATWG URL already normalizes. */
export const parseIpv4 = (s: string): Uint8Array | null => {
  const parts = s.split('.');
  if (parts.length !== 4) return null;
  const out = new Uint8Array(4);
  for (let i = 0; i < 4; i++) {
    if (!V4_PART.test(parts[i]!)) return null;
    const n = Number(parts[i]);
    if (n > 255) return null;
    out[i] = n;
  }
  return out;
};

export const parseIpv6 = (input: string): Uint8Array | null => {
  let s = input.startsWith('[') && input.endsWith(']') ? input.slice(1, -1) : input;
  // A zone id (fe80::1%eth0) only ever names a link-local interface: keep the address part.
  const zone = s.indexOf('%');
  if (zone >= 0) s = s.slice(0, zone);
  if (!s.includes(':')) return null;
  const words: number[] = [];
  let tail: number[] = [];
  const dbl = s.indexOf('::');
  if (dbl !== s.lastIndexOf('::')) return null;
  const readGroups = (part: string, into: number[]): boolean => {
    if (part === '') return true;
    const groups = part.split(':');
    for (let i = 0; i < groups.length; i++) {
      const g = groups[i]!;
      if (i === groups.length - 1 && g.includes('.')) {
        const v4 = parseIpv4(g);
        if (!v4) return false;
        into.push((v4[0]! << 8) | v4[1]!, (v4[2]! << 8) | v4[3]!);
      } else {
        if (!/^[0-9a-fA-F]{1,4}$/.test(g)) return false;
        into.push(parseInt(g, 16));
      }
    }
    return true;
  };
  if (dbl >= 0) {
    if (!readGroups(s.slice(0, dbl), words) || !readGroups(s.slice(dbl + 2), tail)) return null;
    if (words.length + tail.length > 7) return null;
    tail = [...Array(8 - words.length - tail.length).fill(0), ...tail];
  } else if (!readGroups(s, words) || words.length !== 8) return null;
  const all = [...words, ...tail];
  if (all.length !== 8) return null;
  const out = new Uint8Array(16);
  all.forEach((w, i) => {
    out[2 * i] = w >> 8;
    out[2 * i + 1] = w & 0xff;
  });
  return out;
};

export const parseIp = (s: string): Ip | null => {
  const v4 = parseIpv4(s);
  if (v4) return { version: 4, bytes: v4 };
  const v6 = parseIpv6(s);
  return v6 ? { version: 6, bytes: v6 } : null;
};

export const formatIp = (ip: Ip): string => {
  if (ip.version === 4) return [...ip.bytes].join('.');
  const w: string[] = [];
  for (let i = 0; i < 16; i += 2) w.push(((ip.bytes[i]! << 8) | ip.bytes[i + 1]!).toString(16));
  return w.join(':');
};

/** True when the first `prefix` bits of `a` and `b` are equal. */
export const prefixMatch = (a: Uint8Array, b: Uint8Array, prefix: number): boolean => {
  for (let bit = 0; bit < prefix; bit += 8) {
    const take = Math.min(8, prefix - bit);
    const mask = (0xff << (8 - take)) & 0xff;
    if ((a[bit / 8]! & mask) !== (b[bit / 8]! & mask)) return false;
  }
  return true;
};

type Range = [string, number, AddressCategory];

const compile = (rows: Range[], parse: (s: string) => Uint8Array | null) => rows.map(([net, prefix, cat]) => ({ bytes: parse(net)!, prefix, cat }));

// First match wins: the specific metadata addresses come before the ranges holding them.
const V4 = compile(
  [
    ['255.255.255.255', 32, 'broadcast'],
    ['169.254.169.254', 32, 'metadata'], // AWS, GCP, Azure, OpenStack, Oracle instance metadata
    ['169.254.170.2', 32, 'metadata'], // AWS ECS task metadata
    ['100.100.100.200', 32, 'metadata'], // Alibaba Cloud metadata
    ['0.0.0.0', 8, 'unspecified'],
    ['10.0.0.0', 8, 'private'],
    ['100.64.0.0', 10, 'cgnat'],
    ['127.0.0.0', 8, 'loopback'],
    ['169.254.0.0', 16, 'link_local'],
    ['172.16.0.0', 12, 'private'],
    ['192.0.0.0', 24, 'reserved'], // IETF protocol assignments
    ['192.0.2.0', 24, 'reserved'], // TEST-NET-1
    ['192.88.99.0', 24, 'reserved'], // 6to4 relay anycast
    ['192.168.0.0', 16, 'private'],
    ['198.18.0.0', 15, 'reserved'], // benchmarking
    ['198.51.100.0', 24, 'reserved'], // TEST-NET-2
    ['203.0.113.0', 24, 'reserved'], // TEST-NET-3
    ['224.0.0.0', 4, 'multicast'],
    ['240.0.0.0', 4, 'reserved'],
  ],
  parseIpv4,
);

const V6 = compile(
  [
    ['::', 128, 'unspecified'],
    ['::1', 128, 'loopback'],
    ['fd00:ec2::254', 128, 'metadata'], // AWS instance metadata over IPv6
    ['::', 96, 'reserved'], // IPv4-compatible (deprecated)
    ['64:ff9b:1::', 48, 'reserved'], // local-use NAT64
    ['100::', 64, 'reserved'], // discard-only
    ['2001::', 32, 'reserved'], // Teredo: the tunnelled IPv4 is obfuscated, refuse it whole
    ['2001:db8::', 32, 'reserved'], // documentation
    ['fc00::', 7, 'unique_local'],
    ['fe80::', 10, 'link_local'],
    ['fec0::', 10, 'private'], // site-local (deprecated)
    ['ff00::', 8, 'multicast'],
  ],
  parseIpv6,
);

const matchRanges = (bytes: Uint8Array, ranges: { bytes: Uint8Array; prefix: number; cat: AddressCategory }[]): AddressCategory | undefined =>
  ranges.find((r) => prefixMatch(bytes, r.bytes, r.prefix))?.cat;

/**
 * The IPv4 address an IPv6 address stands for, where it has one that the network would
 * reach: IPv4-mapped (::ffff:a.b.c.d), NAT64 (64:ff9b::/96) and 6to4 (2002:AABB:CCDD::).
 */
export const embeddedIpv4 = (ip: Ip): Ip | null => {
  if (ip.version !== 6) return null;
  const b = ip.bytes;
  const zero = (from: number, to: number) => b.subarray(from, to).every((x) => x === 0);
  if (zero(0, 10) && b[10] === 0xff && b[11] === 0xff) return { version: 4, bytes: b.slice(12, 16) };
  if (b[0] === 0x00 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b && zero(4, 12)) return { version: 4, bytes: b.slice(12, 16) };
  if (b[0] === 0x20 && b[1] === 0x02) return { version: 4, bytes: b.slice(2, 6) };
  return null;
};

export const classifyIp = (ip: Ip): AddressCategory => {
  if (ip.version === 4) return matchRanges(ip.bytes, V4) ?? 'public';
  const v4 = embeddedIpv4(ip);
  if (v4) return classifyIp(v4);
  const cat = matchRanges(ip.bytes, V6);
  if (cat) return cat;
  // Only 2000::/3 is global unicast; everything else is unassigned or special.
  return (ip.bytes[0]! & 0xe0) === 0x20 ? 'public' : 'reserved';
};

/** `[::1]` → `::1`: an address as a URL or a Host header writes it, without its brackets. */
export const unbracketHost = (host: string): string => host.trim().replace(/^\[(.*)\]$/, '$1');

/** True when only this machine can connect to an address (127.0.0.0/8, ::1, localhost). */
export const isLoopbackHost = (host: string): boolean => {
  const h = unbracketHost(host).toLowerCase();
  if (h === 'localhost') return true;
  const ip = parseIp(h);
  return ip !== null && classifyIp(ip) === 'loopback';
};
