import { MAX_ORIGIN_LENGTH } from './cors-origins-setting.js';

/**
 * PORTAL_FRAME_ANCESTORS: the origins whose pages may frame the portal (the
 * lender's own dashboard), said by the portal's `frame-ancestors` directive.
 * None by default: then `'none'` and `X-Frame-Options: DENY`.
 */
export type FrameAncestors = readonly string[];

/** A scheme, a host name of letters, digits, `-` and dots (or an IPv6 address in brackets), and a port. */
const PLAIN_ORIGIN = /^https?:\/\/(?:\[[0-9a-f:.]+\]|[a-z0-9-]+(?:\.[a-z0-9-]+)*)(?::[0-9]{1,5})?$/;

/**
 * Space- or comma-separated http(s) origins, each exactly as a browser writes
 * one (`https://dashboard.example.com`, a port only when not the scheme's
 * default; no path, no trailing slash, lower case). No wildcard and no
 * keyword: a directive is built from them, so anything else could widen it.
 */
export function parseFrameAncestors(raw: string | undefined): FrameAncestors | { error: string } {
  if (raw === undefined || raw.trim() === '') return [];
  const origins: string[] = [];
  for (const entry of raw.split(/[\s,]+/).filter((part) => part !== '')) {
    let origin: string | undefined;
    try {
      const url = new URL(entry);
      if (url.protocol === 'http:' || url.protocol === 'https:') origin = url.origin;
    } catch {
      origin = undefined;
    }
    // The URL parser takes `*`, `;` and more in a host name; a CSP directive would read them: only plain hosts.
    if (origin === undefined || origin !== entry || !PLAIN_ORIGIN.test(entry) || entry.length > MAX_ORIGIN_LENGTH) {
      return {
        error: `must be origins separated by spaces or commas, such as https://dashboard.example.com (scheme, host and port only, lower case, no wildcard, at most ${MAX_ORIGIN_LENGTH} characters), got '${entry}'`,
      };
    }
    if (!origins.includes(origin)) origins.push(origin);
  }
  return origins;
}
