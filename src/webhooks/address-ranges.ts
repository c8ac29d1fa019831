import ipaddr from 'ipaddr.js';

/** Why an address may not receive webhooks, most dangerous first: an address in several ranges takes the first. */
export const ADDRESS_CATEGORIES = [
  'cloud metadata',
  'unspecified',
  'loopback',
  'private',
  'shared (CGNAT)',
  'link-local',
  'multicast',
  'broadcast',
  'reserved',
] as const;
export type AddressCategory = (typeof ADDRESS_CATEGORIES)[number];

type Ranges = readonly (readonly [AddressCategory, readonly string[]])[];

// IANA's IPv4 and IPv6 special-purpose registries, less the globally reachable entries; the order decides the label.
const IPV4_RANGES: Ranges = [
  // AWS/GCP/Azure/Oracle (169.254.169.254), AWS ECS task metadata, Alibaba Cloud.
  ['cloud metadata', ['169.254.169.254/32', '169.254.170.2/32', '100.100.100.200/32']],
  ['unspecified', ['0.0.0.0/8']],
  ['loopback', ['127.0.0.0/8']],
  ['private', ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16']],
  ['shared (CGNAT)', ['100.64.0.0/10']],
  ['link-local', ['169.254.0.0/16']],
  ['multicast', ['224.0.0.0/4']],
  ['broadcast', ['255.255.255.255/32']],
  [
    'reserved',
    [
      '192.0.0.0/24', // IETF protocol assignments
      '192.0.2.0/24', // documentation (TEST-NET-1)
      '192.88.99.0/24', // 6to4 relay anycast
      '198.18.0.0/15', // benchmarking
      '198.51.100.0/24', // documentation (TEST-NET-2)
      '203.0.113.0/24', // documentation (TEST-NET-3)
      '240.0.0.0/4', // future use
    ],
  ],
];

// The ranges that wrap an IPv4 address (IPv4-mapped, -translated and -compatible, NAT64, 6to4, Teredo) are not
// here: embeddedIPv4Candidates reads the address they reach.
const IPV6_RANGES: Ranges = [
  ['cloud metadata', ['fd00:ec2::254/128']],
  ['unspecified', ['::/128']],
  ['loopback', ['::1/128']],
  ['private', ['fc00::/7', 'fec0::/10']], // unique local; deprecated site-local
  ['link-local', ['fe80::/10']],
  ['multicast', ['ff00::/8']],
  [
    'reserved',
    [
      '100::/64', // discard-only
      '2001:2::/48', // benchmarking
      '2001:10::/28', // ORCHID
      '2001:db8::/32', // documentation
      '3fff::/20', // documentation
    ],
  ],
];

type Cidr = [ipaddr.IPv4 | ipaddr.IPv6, number];
const parsedRanges = (table: Ranges) => table.map(([category, ranges]) => [category, ranges.map((range) => ipaddr.parseCIDR(range) as Cidr)] as const);
const IPV4_LISTS = parsedRanges(IPV4_RANGES);
const IPV6_LISTS = parsedRanges(IPV6_RANGES);

function listedCategory(address: ipaddr.IPv4 | ipaddr.IPv6, lists: typeof IPV4_LISTS): AddressCategory | null {
  return lists.find(([, ranges]) => ranges.some((range) => address.kind() === range[0].kind() && address.match(range)))?.[0] ?? null;
}

const ipv4At = (bytes: readonly number[], ...indexes: number[]) => new ipaddr.IPv4(indexes.map((index) => bytes[index]!));

/**
 * The IPv4 addresses an IPv6 one may reach, where the IPv6 form wraps one, and
 * whether the wrapping range is itself not globally reachable (then it stays
 * refused as `reserved` even when what it wraps is public):
 * - IPv4-mapped ::ffff:0:0/96 and IPv4-translated ::ffff:0:0:0/96 (RFC 6145);
 * - IPv4-compatible ::/96 (deprecated; `::` and `::1` are categorized as themselves);
 * - NAT64: the well-known 64:ff9b::/96, and local-use 64:ff9b:1::/48 (RFC 8215), whose operator may embed the
 *   address at any RFC 6052 prefix length within it (/48, /56, /64, /96): every position is read;
 * - 6to4 2002::/16 (bits 16–47) and Teredo 2001::/32 (its server, and its client with the bits inverted).
 * Without this, ::ffff:0:169.254.169.254 would be a way around the IPv4 rules.
 */
export function embeddedIPv4Candidates(address: ipaddr.IPv6): { readonly wrapped: ipaddr.IPv4[]; readonly reserved: boolean } | null {
  const bytes = address.toByteArray();
  const zeros = (from: number, to: number) => bytes.slice(from, to).every((byte) => byte === 0);
  const tail = () => ipv4At(bytes, 12, 13, 14, 15);
  if (zeros(0, 10) && bytes[10] === 0xff && bytes[11] === 0xff) return { wrapped: [tail()], reserved: false };
  if (zeros(0, 8) && bytes[8] === 0xff && bytes[9] === 0xff && zeros(10, 12)) return { wrapped: [tail()], reserved: false };
  if (zeros(0, 12)) return { wrapped: [tail()], reserved: true };
  const prefix = address.parts;
  if (prefix[0] === 0x64 && prefix[1] === 0xff9b && zeros(4, 12)) return { wrapped: [tail()], reserved: false };
  if (prefix[0] === 0x64 && prefix[1] === 0xff9b && prefix[2] === 1) {
    const candidates = [ipv4At(bytes, 6, 7, 9, 10), ipv4At(bytes, 7, 9, 10, 11), ipv4At(bytes, 9, 10, 11, 12), tail()];
    return { wrapped: candidates, reserved: true };
  }
  if (prefix[0] === 0x2002) return { wrapped: [ipv4At(bytes, 2, 3, 4, 5)], reserved: false };
  if (prefix[0] === 0x2001 && prefix[1] === 0) {
    const client = new ipaddr.IPv4(bytes.slice(12, 16).map((byte) => byte ^ 0xff));
    return { wrapped: [ipv4At(bytes, 4, 5, 6, 7), client], reserved: true };
  }
  return null;
}

/**
 * Why `address` (an IP literal in any textual form ipaddr.js reads — IPv4 in
 * decimal, octal or hex parts, IPv6 compressed, mixed, in any letter case,
 * bracketed, with a zone such as `%eth0`, which is ignored) must not receive
 * webhooks, or null when it is a public unicast address. A string that is
 * not an IP address is refused as `reserved`: it cannot be checked.
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
 * Addresses already categorized: an endpoint with an IP literal is checked on
 * every attempt, and a public address is matched against every range.
 */
const KNOWN_CATEGORIES = new Map<string, AddressCategory | null>();
const MAX_KNOWN_CATEGORIES = 4096;

// ipaddr.js reads `::a.b.c.d` (IPv4-compatible) as IPv4-mapped `::ffff:a.b.c.d`: its bytes are rebuilt here.
const IPV4_COMPATIBLE = /^::(\d+\.\d+\.\d+\.\d+)(%.*)?$/;

function parsed(text: string): ipaddr.IPv4 | ipaddr.IPv6 | null {
  const compatible = IPV4_COMPATIBLE.exec(text);
  try {
    if (compatible) return new ipaddr.IPv6([0, 0, 0, 0, 0, 0, ...pairs(ipaddr.IPv4.parse(compatible[1]!).octets)]);
    return ipaddr.parse(text);
  } catch {
    return null;
  }
}

const pairs = (octets: readonly number[]) => [(octets[0]! << 8) | octets[1]!, (octets[2]! << 8) | octets[3]!];

function categoryOf(address: string): AddressCategory | null {
  const ip = parsed(address.replace(/^\[(.*)\]$/, '$1'));
  if (ip === null) return 'reserved';
  if (ip.kind() === 'ipv4') return listedCategory(ip, IPV4_LISTS);
  const listed = listedCategory(ip, IPV6_LISTS);
  if (listed !== null) return listed;
  const embedded = embeddedIPv4Candidates(ip as ipaddr.IPv6);
  if (embedded === null) return null;
  const categories = embedded.wrapped.map((wrapped) => listedCategory(wrapped, IPV4_LISTS));
  if (!embedded.reserved) return mostDangerous(categories);
  // A range refused in any case: what it wraps only raises it (to cloud metadata, refused whatever the policy);
  // the zeros of an unused position (0.0.0.0/8) say nothing.
  return mostDangerous([...categories.filter((category) => category !== 'unspecified'), 'reserved']);
}

function mostDangerous(categories: readonly (AddressCategory | null)[]): AddressCategory | null {
  return ADDRESS_CATEGORIES.find((category) => categories.includes(category)) ?? null;
}
