import { describe, expect, it } from 'vitest';
import { classifyIp, parseIp } from '../../core/security/address';
import { checkAddress, checkEndpoint, destinationPolicy, parseCidr } from '../../core/security/destination';
import { guardedLookup, isBlockedError } from '../../workers/node/ssrf-guard';

// The SSRF guard as FUNCTIONS: nothing here opens a connection. Each hostile target is an
// endpoint URL exactly as a producer could enqueue it.
const HOSTILE: [url: string, category: string][] = [
  ['http://127.0.0.1/', 'loopback'],
  ['http://127.255.255.254:8080/x', 'loopback'],
  ['http://[::1]/', 'loopback'],
  ['http://[0:0:0:0:0:0:0:1]/', 'loopback'],
  ['http://2130706433/', 'loopback'], // decimal
  ['http://0x7f000001/', 'loopback'], // hex
  ['http://0177.0.0.1/', 'loopback'], // octal
  ['http://0x7f.1/', 'loopback'], // mixed short form
  ['http://127.1/', 'loopback'],
  ['http://[::ffff:127.0.0.1]/', 'loopback'], // IPv4-mapped
  ['http://[::ffff:7f00:1]/', 'loopback'],
  ['http://0.0.0.0/', 'unspecified'],
  ['http://0/', 'unspecified'],
  ['http://[::]/', 'unspecified'],
  ['http://10.0.0.1/', 'private'],
  ['http://10.255.255.255/', 'private'],
  ['http://172.16.0.1/', 'private'],
  ['http://172.31.255.255/', 'private'],
  ['http://192.168.1.1/', 'private'],
  ['http://[::ffff:192.168.0.1]/', 'private'],
  ['http://[64:ff9b::10.0.0.1]/', 'private'], // NAT64
  ['http://[2002:c0a8:0101::1]/', 'private'], // 6to4 of 192.168.1.1
  ['http://169.254.169.254/latest/meta-data/', 'metadata'],
  ['http://[::ffff:169.254.169.254]/', 'metadata'],
  ['http://0xa9fea9fe/', 'metadata'], // 169.254.169.254 in hex
  ['http://169.254.170.2/v2/credentials', 'metadata'],
  ['http://100.100.100.200/', 'metadata'],
  ['http://[fd00:ec2::254]/', 'metadata'],
  ['http://169.254.1.1/', 'link_local'],
  ['http://[fe80::1]/', 'link_local'],
  ['http://100.64.0.1/', 'cgnat'],
  ['http://100.127.255.254/', 'cgnat'],
  ['http://[fd00::1]/', 'unique_local'],
  ['http://[fc00::1]/', 'unique_local'],
  ['http://224.0.0.1/', 'multicast'],
  ['http://239.255.255.250/', 'multicast'],
  ['http://[ff02::1]/', 'multicast'],
  ['http://255.255.255.255/', 'broadcast'],
  ['http://240.0.0.1/', 'reserved'],
  ['http://192.0.2.1/', 'reserved'],
  ['http://198.18.0.1/', 'reserved'],
  ['http://[2001:db8::1]/', 'reserved'],
  ['http://[2001::1]/', 'reserved'], // Teredo
  ['http://[::127.0.0.1]/', 'reserved'], // IPv4-compatible
];

const PUBLIC = [
  'http://93.184.216.34/',
  'https://8.8.8.8/',
  'http://[2606:4700:4700::1111]/',
  'http://[::ffff:8.8.8.8]/',
  'http://172.32.0.1/',
  'http://100.128.0.1/',
  'http://11.0.0.1/',
];

describe('SSRF address check (as a function)', () => {
  const none = destinationPolicy([]);

  it(`refuses each of ${HOSTILE.length} hostile targets by default, naming the category`, () => {
    expect(HOSTILE.length).toBeGreaterThanOrEqual(25);
    for (const [url, category] of HOSTILE) {
      const v = checkEndpoint(url, none);
      expect(v, url).not.toBe('resolve');
      expect(v !== 'resolve' && v.allowed, url).toBe(false);
      expect(v !== 'resolve' && v.category, url).toBe(category);
    }
  });

  it('allows public addresses and leaves names to resolution', () => {
    for (const url of PUBLIC) expect(checkEndpoint(url, none), url).toMatchObject({ allowed: true, category: 'public' });
    expect(checkEndpoint('https://hooks.example.com/x', none)).toBe('resolve');
    expect(checkEndpoint('http://localhost:8080/', none)).toBe('resolve');
  });

  it('opens exactly the allow-listed ranges, in every form of the address', () => {
    const loop = destinationPolicy(['127.0.0.0/8', '::1/128']);
    for (const url of ['http://127.0.0.1/', 'http://[::1]/', 'http://2130706433/', 'http://[::ffff:127.0.0.1]/'])
      expect(checkEndpoint(url, loop), url).toMatchObject({ allowed: true });
    for (const url of ['http://10.0.0.1/', 'http://169.254.169.254/', 'http://[fd00::1]/', 'http://0.0.0.0/'])
      expect(checkEndpoint(url, loop), url).toMatchObject({ allowed: false });
    const ten = destinationPolicy(['10.1.0.0/16']);
    expect(checkAddress('10.1.255.255', ten).allowed).toBe(true);
    expect(checkAddress('10.2.0.0', ten).allowed).toBe(false);
  });

  it('never opens a metadata address by a broad range, only by naming it', () => {
    for (const cidr of ['0.0.0.0/0', '169.254.0.0/16', '::/0', 'fd00::/8']) {
      expect(checkAddress('169.254.169.254', destinationPolicy([cidr])).allowed, cidr).toBe(false);
      expect(checkAddress('fd00:ec2::254', destinationPolicy([cidr])).allowed, cidr).toBe(false);
    }
    expect(checkAddress('169.254.169.254', destinationPolicy(['169.254.169.254/32'])).allowed).toBe(true);
    expect(checkAddress('169.254.1.1', destinationPolicy(['169.254.0.0/16'])).allowed).toBe(true);
  });

  it('rejects malformed CIDRs and addresses', () => {
    for (const bad of ['10.0.0.0/33', '::1/129', 'banana', '10.0.0/8', '1.2.3.4/-1', '']) expect(() => parseCidr(bad), bad).toThrow(/CIDR|prefix/);
    for (const bad of ['256.1.1.1', '1.2.3', '01.2.3.4', '1::2::3', ':::', 'g::1']) expect(parseIp(bad), bad).toBeNull();
    expect(classifyIp(parseIp('fe80::1%eth0')!)).toBe('link_local');
    expect(checkAddress('not-an-ip', destinationPolicy([])).allowed).toBe(false);
  });
});

describe('guarded DNS lookup (fake resolver, no network)', () => {
  type Addr = { address: string; family: number };
  const resolver = (table: Record<string, Addr[]>) => (host: string, cb: (e: NodeJS.ErrnoException | null, a: Addr[]) => void) => cb(null, table[host] ?? []);
  const lookup = (policy: string[], table: Record<string, Addr[]>, host: string, all: boolean) =>
    new Promise<{ err: unknown; result: unknown }>((resolve) => {
      const fn = guardedLookup(destinationPolicy(policy), resolver(table)) as unknown as (h: string, o: object, cb: (...a: unknown[]) => void) => void;
      fn(host, { all }, (err: unknown, a: unknown, f: unknown) => resolve({ err, result: all ? a : [a, f] }));
    });
  const table = {
    localhost: [
      { address: '127.0.0.1', family: 4 },
      { address: '::1', family: 6 },
    ],
    'rebind.test': [
      { address: '93.184.216.34', family: 4 },
      { address: '10.0.0.5', family: 4 },
    ],
    'meta.test': [{ address: '169.254.169.254', family: 4 }],
  };

  it('refuses a name that resolves only to refused addresses', async () => {
    for (const host of ['localhost', 'meta.test']) {
      const { err } = await lookup([], table, host, true);
      expect(isBlockedError(err), host).toBe(true);
      expect(String((err as Error).message)).toMatch(/refused/);
    }
  });

  it('hands the connect only the checked addresses', async () => {
    expect((await lookup([], table, 'rebind.test', true)).result).toEqual([{ address: '93.184.216.34', family: 4 }]);
    expect((await lookup([], table, 'rebind.test', false)).result).toEqual(['93.184.216.34', 4]);
    expect((await lookup(['127.0.0.0/8', '::1/128'], table, 'localhost', true)).result).toEqual(table.localhost);
  });
});
