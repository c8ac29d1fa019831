import { isIP } from 'node:net';

/**
 * Which X-Forwarded-* hops to believe: none (`false`), the last `n` hops
 * (the proxies in front, counted from this server), or only hops from these
 * proxy addresses / CIDR ranges (the names `loopback`, `linklocal` and
 * `uniquelocal` stand for their ranges, as in Fastify's `trustProxy`).
 */
export type TrustProxy = false | number | readonly string[];

const RANGE_NAMES = ['loopback', 'linklocal', 'uniquelocal'];

/**
 * Reads `TRUST_PROXY`. **Decision:** `true` means one hop (the address the
 * proxy in front saw connect), not "believe every hop" as in Fastify: with a
 * proxy that appends to X-Forwarded-For, believing every hop lets a client
 * name any address it likes.
 */
export function parseTrustProxy(raw: string): { trust: TrustProxy } | { error: string } {
  const value = raw.trim().toLowerCase();
  if (['false', 'no', 'off', '0'].includes(value)) return { trust: false };
  if (['true', 'yes', 'on'].includes(value)) return { trust: 1 };
  if (/^\d+$/.test(value)) {
    const hops = Number(value);
    return hops <= 32 ? { trust: hops } : { error: `must be a hop count from 0 to 32, got '${raw}'` };
  }
  const entries = value.split(',').map((entry) => entry.trim());
  const bad = entries.find((entry) => !isAddressOrRange(entry));
  if (bad !== undefined) {
    return {
      error: `must be false, a hop count (1, 2, …) or a comma-separated list of proxy addresses / CIDR ranges (10.0.0.0/8, 2001:db8::/32, loopback), got '${raw}'`,
    };
  }
  return { trust: entries };
}

function isAddressOrRange(entry: string): boolean {
  if (RANGE_NAMES.includes(entry)) return true;
  const [address = '', prefix, extra] = entry.split('/');
  const family = isIP(address);
  if (family === 0 || extra !== undefined) return false;
  if (prefix === undefined) return true;
  return /^\d{1,3}$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128);
}
