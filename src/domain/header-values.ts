import { API_VERSION, API_VERSION_HEADER } from './api-version.js';

// The values of the headers every answer carries: sent by src/http/, stated by the OpenAPI document.

// For JSON nothing may be loaded, framed or executed; HTML pages (API docs)
// set their own policy.
export const JSON_CSP = "default-src 'none'; frame-ancestors 'none'";

// Everything the reference page loads comes from this server (the Swagger UI
// assets ship in the npm package), so it works with no internet access, and
// the policy makes any attempt to load from elsewhere fail visibly.
export const DOCS_CSP =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
  "connect-src 'self'; font-src 'self' data:; object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'self'";

/**
 * What every answer carries, whatever produced it (a route, a hook, or the socket-level parser rejection):
 * the security headers, and the API version that answered (docs/api.md "Versioning").
 */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  [API_VERSION_HEADER]: API_VERSION,
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
};

/**
 * The longest wait a Retry-After asks for: an estimate beyond an hour (an overloaded write's queue) says
 * only "much later", and a client told to wait longer should not trust its own clock that far either.
 */
export const MAX_RETRY_AFTER_SECONDS = 3600;

/** Whole seconds until `ms` has passed, from 1 to MAX_RETRY_AFTER_SECONDS. */
export function retryAfterSeconds(ms: number): number {
  return Math.min(MAX_RETRY_AFTER_SECONDS, Math.max(1, Math.ceil(ms / 1000)));
}
