import { isIPv4, isIPv6 } from 'node:net';

/**
 * The address the failed-authentication throttle counts against: an IPv4
 * address as is, an IPv6 address by its /64 (a single host is handed a whole
 * /64 and can pick any address in it, so counting per address would give it
 * 2^64 fresh budgets). An IPv4-mapped IPv6 address (`::ffff:203.0.113.9`, a
 * dual-stack socket) counts as the IPv4 address.
 */
export function throttleAddressOf(address: string | undefined): string {
  // Undefined once the socket is gone: such requests share one counter.
  if (address === undefined) return 'unknown';
  // Asked twice for every authenticated request (before and after authentication), mostly for one client.
  if (address === last.address) return last.throttled;
  const throttled = throttledAddress(address);
  last = { address, throttled };
  return throttled;
}

let last = { address: '', throttled: '' };

function throttledAddress(address: string): string {
  const bare = address.split('%')[0] ?? address;
  if (isIPv4(bare)) return bare;
  if (!isIPv6(bare)) return address;
  const hextets = expandIPv6(bare);
  if (hextets.slice(0, 5).every((hextet) => hextet === 0) && hextets[5] === 0xffff) {
    return [hextets[6] ?? 0, hextets[7] ?? 0].flatMap((hextet) => [hextet >> 8, hextet & 0xff]).join('.');
  }
  const network = [...hextets.slice(0, 4), 0, 0, 0, 0].map((hextet) => hextet.toString(16)).join(':');
  // The URL parser writes IPv6 in its canonical compressed form.
  return `${new URL(`http://[${network}]/`).hostname.slice(1, -1)}/64`;
}

/** The eight 16-bit groups of a valid IPv6 address (any spelling, a trailing dotted quad included). */
function expandIPv6(address: string): number[] {
  let text = address.toLowerCase();
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const first = head === '' ? [] : head.split(':');
  const last = tail === undefined || tail === '' ? [] : tail.split(':');
  const groups = tail === undefined ? first : [...first, ...new Array<string>(8 - first.length - last.length).fill('0'), ...last];
  return groups.map((group) => parseInt(group, 16));
}
