/**
 * CORS (CORS_ALLOWED_ORIGINS): the origins whose browser pages may read the API's answers, and what they
 * are told. Sent by src/http/cors.ts, stated by the OpenAPI document.
 */
export type CorsOrigins = readonly string[];

/** The longest origin accepted: a scheme, `://`, a 253-character host name and a port. */
export const MAX_ORIGIN_LENGTH = 270;

/** The request headers a page on an allowed origin may send (what the API reads). */
export const CORS_ALLOWED_REQUEST_HEADERS = 'Authorization, Content-Type, Idempotency-Key, X-Request-Id';

/** The answer headers such a page may read besides the CORS-safelisted ones. */
export const CORS_EXPOSED_HEADERS = 'Link, X-Request-Id, X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, Retry-After, Idempotent-Replayed, API-Version';

/** How long a browser may reuse a preflight's answer (Chromium caps it at 2 hours, Firefox at 24). */
export const CORS_MAX_AGE_SECONDS = 600;

/**
 * The comma-separated origins of CORS_ALLOWED_ORIGINS, each an http(s) origin exactly as a browser
 * sends it in `Origin` (`https://app.example.com`, a port only when not the scheme's default; no
 * path, no trailing slash, lower case). Empty or absent: none (no CORS header is ever sent).
 */
export function parseCorsOrigins(raw: string | undefined): CorsOrigins | { error: string } {
  if (raw === undefined || raw.trim() === '') return [];
  const origins: string[] = [];
  for (const entry of raw.split(',').map((part) => part.trim())) {
    if (entry === '*') return { error: "must list origins: '*' (any site reading answers with a key it holds) is not allowed" };
    let origin: string | undefined;
    try {
      const url = new URL(entry);
      if (url.protocol === 'http:' || url.protocol === 'https:') origin = url.origin;
    } catch {
      origin = undefined;
    }
    if (origin === undefined || origin !== entry || entry.length > MAX_ORIGIN_LENGTH) {
      return { error: `must be comma-separated origins such as https://app.example.com (scheme, host and port only, lower case, at most ${MAX_ORIGIN_LENGTH} characters), got '${entry}'` };
    }
    origins.push(origin);
  }
  return origins;
}
