import { BlockList, isIPv4, isIPv6 } from 'node:net';

/** Why an address may not receive webhooks; `cloud metadata` is checked first, being the most dangerous. */
export type AddressCategory =
  | 'cloud metadata'
  | 'unspecified'
  | 'loopback'
  | 'private'
  | 'shared (CGNAT)'
  | 'link-local'
  | 'multicast'
  | 'broadcast'
  | 'reserved';

type Range = readonly [address: string, prefix: number];

// IANA's IPv4 and IPv6 special-purpose registries, less the globally reachable entries; the order decides the label.
const IPV4_RANGES: readonly (readonly [AddressCategory, readonly Range[]])[] = [
  // AWS/GCP/Azure/Oracle (169.254.169.254), AWS ECS task metadata, Alibaba Cloud.
  ['cloud metadata', [['169.254.169.254', 32], ['169.254.170.2', 32], ['100.100.100.200', 32]]],
  ['unspecified', [['0.0.0.0', 8]]],
  ['loopback', [['127.0.0.0', 8]]],
  ['private', [['10.0.0.0', 8], ['172.16.0.0', 12], ['192.168.0.0', 16]]],
  ['shared (CGNAT)', [['100.64.0.0', 10]]],
  ['link-local', [['169.254.0.0', 16]]],
  ['multicast', [['224.0.0.0', 4]]],
  ['broadcast', [['255.255.255.255', 32]]],
  [
    'reserved',
    [
      ['192.0.0.0', 24], // IETF protocol assignments
      ['192.0.2.0', 24], // documentation (TEST-NET-1)
      ['192.88.99.0', 24], // 6to4 relay anycast
      ['198.18.0.0', 15], // benchmarking
      ['198.51.100.0', 24], // documentation (TEST-NET-2)
      ['203.0.113.0', 24], // documentation (TEST-NET-3)
      ['240.0.0.0', 4], // future use
    ],
  ],
];

const IPV6_RANGES: readonly (readonly [AddressCategory, readonly Range[]])[] = [
  ['cloud metadata', [['fd00:ec2::254', 128]]],
  ['unspecified', [['::', 128]]],
  ['loopback', [['::1', 128]]],
  ['private', [['fc00::', 7], ['fec0::', 10]]], // unique local; deprecated site-local
  ['link-local', [['fe80::', 10]]],
  ['multicast', [['ff00::', 8]]],
  [
    'reserved',
    [
      ['::', 96], // deprecated IPv4-compatible
      ['64:ff9b:1::', 48], // local-use NAT64
      ['100::', 64], // discard-only
      ['2001::', 32], // Teredo
      ['2001:2::', 48], // benchmarking
      ['2001:10::', 28], // ORCHID
      ['2001:db8::', 32], // documentation
      ['3fff::', 20], // documentation
    ],
  ],
];

function blockLists(family: 'ipv4' | 'ipv6', table: typeof IPV4_RANGES): readonly (readonly [AddressCategory, BlockList])[] {
  return table.map(([category, ranges]) => {
    const list = new BlockList();
    for (const [address, prefix] of ranges) list.addSubnet(address, prefix, family);
    return [category, list] as const;
  });
}

const IPV4_LISTS = blockLists('ipv4', IPV4_RANGES);
const IPV6_LISTS = blockLists('ipv6', IPV6_RANGES);

/** The 16 bytes of a valid IPv6 address (any textual form, with or without a dotted-quad tail). */
function ipv6Bytes(address: string): Uint8Array {
  let text = address;
  const bytes = new Uint8Array(16);
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted[1]!.split('.').map(Number);
    text = `${text.slice(0, dotted.index)}${((a! << 8) | b!).toString(16)}:${((c! << 8) | d!).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const headGroups = head === '' ? [] : head.split(':');
  const tailGroups = tail === undefined || tail === '' ? [] : tail.split(':');
  const groups = [...headGroups, ...Array<string>(8 - headGroups.length - tailGroups.length).fill('0'), ...tailGroups];
  groups.forEach((group, index) => {
    const value = parseInt(group, 16);
    bytes[index * 2] = value >> 8;
    bytes[index * 2 + 1] = value & 0xff;
  });
  return bytes;
}

const startsWith = (bytes: Uint8Array, prefix: readonly number[]) => prefix.every((byte, index) => bytes[index] === byte);
const dottedQuad = (bytes: Uint8Array, offset: number) => Array.from(bytes.subarray(offset, offset + 4)).join('.');

/**
 * The IPv4 address an IPv6 one reaches, where the IPv6 form only wraps it:
 * IPv4-mapped (::ffff:a.b.c.d), the NAT64 well-known prefix (64:ff9b::/96)
 * and 6to4 (2002:aabb:ccdd::/48). Without this, ::ffff:127.0.0.1 would be a
 * way around the IPv4 rules.
 */
export function embeddedIPv4(address: string): string | null {
  const bytes = ipv6Bytes(address);
  if (startsWith(bytes, [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff])) return dottedQuad(bytes, 12);
  if (startsWith(bytes, [0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0])) return dottedQuad(bytes, 12);
  if (startsWith(bytes, [0x20, 0x02])) return dottedQuad(bytes, 2);
  return null;
}

/**
 * Why `address` (an IP literal; an IPv6 zone such as `%eth0` is ignored) must
 * not receive webhooks, or null when it is a public unicast address. A string
 * that is not an IP address is refused as `reserved`: it cannot be checked.
 */
export function blockedCategory(address: string): AddressCategory | null {
  const known = KNOWN_CATEGORIES.get(address);
  if (known !== undefined) return known;
  const category = categoryOf(address);
  if (KNOWN_CATEGORIES.size >= MAX_KNOWN_CATEGORIES) KNOWN_CATEGORIES.clear();
  KNOWN_CATEGORIES.set(address, category);
  return category;
}

/**
 * Addresses already categorized. An endpoint with an IP literal is checked on
 * every attempt, and BlockList.check allocates on every call: 3 µs for a
 * loopback address, 12 µs for a public one (every list is asked).
 */
const KNOWN_CATEGORIES = new Map<string, AddressCategory | null>();
const MAX_KNOWN_CATEGORIES = 4096;

function categoryOf(address: string): AddressCategory | null {
  const plain = address.replace(/^\[(.*)\]$/, '$1').replace(/%.*$/, '');
  if (isIPv4(plain)) return IPV4_LISTS.find(([, list]) => list.check(plain, 'ipv4'))?.[0] ?? null;
  if (!isIPv6(plain)) return 'reserved';
  const wrapped = embeddedIPv4(plain);
  if (wrapped !== null) return blockedCategory(wrapped);
  return IPV6_LISTS.find(([, list]) => list.check(plain, 'ipv6'))?.[0] ?? null;
}
