import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { isIP } from 'node:net';
import { blockedCategory, type AddressCategory } from './address-ranges.js';

/**
 * Where webhooks may go. By default only `https://` URLs whose every address
 * is public. `allowPrivate` (WEBHOOK_ALLOW_PRIVATE=1) also allows plain
 * `http://` and private, loopback and link-local addresses, for tests and
 * internal networks, but still not the cloud metadata service. A host in
 * `allowHosts` (exact, case-insensitive; an IP literal may be listed) may use
 * `http://` and resolve anywhere except cloud metadata; a metadata address
 * is reached only if that very address is listed.
 */
export interface DestinationPolicy {
  readonly allowPrivate: boolean;
  readonly allowHosts: readonly string[];
}

export const MAX_WEBHOOK_URL_LENGTH = 2048;

/**
 * `category` is set when the URL names an address the policy refuses (an IP literal, a localhost name);
 * `allowedWithPrivate` when WEBHOOK_ALLOW_PRIVATE=1 would accept it (plain http://, a loopback or private address).
 */
export type UrlCheck =
  | { readonly ok: true; readonly url: URL }
  | { readonly ok: false; readonly problem: string; readonly category: AddressCategory | null; readonly allowedWithPrivate?: true };

/** A host without IPv6 brackets or a trailing dot, lower-cased: `[::1]` → `::1`, `Example.COM.` → `example.com`. */
export function normalizeHost(host: string): string {
  return host.replace(/^\[(.*)\]$/, '$1').replace(/\.$/, '').toLowerCase();
}

function isAllowListed(host: string, policy: DestinationPolicy): boolean {
  const normalized = normalizeHost(host);
  return policy.allowHosts.some((allowed) => normalizeHost(allowed) === normalized);
}

/** Why `address`, which `host` resolved to (or is), may not be connected to under `policy`; null when it may. */
export function refusedCategory(address: string, host: string, policy: DestinationPolicy): AddressCategory | null {
  const category = blockedCategory(address);
  if (category === null) return null;
  if (isAllowListed(host, policy) && (category !== 'cloud metadata' || isAllowListed(address, policy))) return null;
  if (policy.allowPrivate && category !== 'cloud metadata') return null;
  return category;
}

/** The error a refused address raises, at lookup or before connecting to an IP literal. */
export class WebhookAddressError extends Error {
  readonly code = 'ERR_WEBHOOK_ADDRESS';
  constructor(
    readonly host: string,
    readonly address: string,
    readonly category: AddressCategory,
  ) {
    super(
      host === address
        ? `refused to deliver to ${address}: a ${category} address`
        : `refused to deliver to ${host}: it resolves to ${address}, a ${category} address`,
    );
    this.name = 'WebhookAddressError';
  }
}

/**
 * Checks a webhook endpoint's URL when it is created or changed: `https://`
 * (or `http://` where the policy allows it), a host, no user name or password,
 * no fragment, and, for an IP literal or a `localhost` name, an address the
 * policy allows. A host name is not resolved here (DNS can change by delivery
 * time); `safeLookup` checks every address when connecting.
 */
export function checkWebhookUrl(text: string, policy: DestinationPolicy): UrlCheck {
  if (text.length > MAX_WEBHOOK_URL_LENGTH) return { ok: false, category: null, problem: `must be at most ${MAX_WEBHOOK_URL_LENGTH} characters` };
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return { ok: false, category: null, problem: 'must be an absolute URL' };
  }
  const host = normalizeHost(url.hostname);
  const plainHttpAllowed = policy.allowPrivate || isAllowListed(host, policy);
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && plainHttpAllowed)) {
    if (plainHttpAllowed) return { ok: false, category: null, problem: 'must be an http:// or https:// URL' };
    return { ok: false, category: null, problem: 'must be an https:// URL', ...(url.protocol === 'http:' ? { allowedWithPrivate: true as const } : {}) };
  }
  if (host === '') return { ok: false, category: null, problem: 'must have a host' };
  if (url.username !== '' || url.password !== '') return { ok: false, category: null, problem: 'must not contain a user name or password' };
  if (url.hash !== '' || text.includes('#')) return { ok: false, category: null, problem: 'must not contain a fragment (#…)' };
  // Node connects to an IP literal without calling `lookup`, so this is the check for one at delivery too.
  // RFC 6761: localhost names always mean the loopback interface, whatever DNS says.
  const literal = isIP(host) !== 0 ? host : host === 'localhost' || host.endsWith('.localhost') ? '127.0.0.1' : null;
  const category = literal === null ? null : refusedCategory(literal, host, policy);
  if (category !== null) {
    return { ok: false, category, problem: `must not point to a ${category} address`, ...(category === 'cloud metadata' ? {} : { allowedWithPrivate: true as const }) };
  }
  return { ok: true, url };
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/** The signature of `dns.lookup` that `http.request({ lookup })` calls. */
export type SafeLookup = (hostname: string, options: LookupOptions, callback: LookupCallback) => void;

/**
 * A `dns.lookup` for `http(s).request({ lookup })` that resolves the host and
 * fails with a WebhookAddressError (`code: 'ERR_WEBHOOK_ADDRESS'`) when ANY
 * address it would hand to the socket is refused by the policy. The check is
 * on the addresses the socket then connects to, so a DNS answer that changed
 * since the URL was checked (DNS rebinding) cannot get past it. Node does not
 * call `lookup` for an IP literal host: `checkWebhookUrl` checks those.
 */
export function safeLookup(policy: DestinationPolicy, resolve: typeof dnsLookup = dnsLookup): SafeLookup {
  return (hostname, options, callback) => {
    resolve(hostname, { ...options, all: true as const }, (error, addresses) => {
      if (error) return callback(error, []);
      for (const { address } of addresses) {
        const category = refusedCategory(address, hostname, policy);
        if (category !== null) return callback(new WebhookAddressError(hostname, address, category), []);
      }
      if (options.all) return callback(null, addresses);
      const first = addresses[0];
      if (!first) return callback(Object.assign(new Error(`no address for ${hostname}`), { code: 'ENOTFOUND' }), []);
      callback(null, first.address, first.family);
    });
  };
}
