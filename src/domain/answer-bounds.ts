// Bounds on text the service composes from what a client or the operator gave it: enforced where that
// text is made (src/config.ts, src/http/problem.ts, src/listing/page-links.ts), stated by the OpenAPI document.

/** Node's limit on a request's line and headers together (its default max-http-header-size): a longer one is a 400. */
export const MAX_REQUEST_HEAD_BYTES = 16 * 1024;

/** PUBLIC_URL's longest form once normalized (src/config.ts refuses a longer one). */
export const MAX_PUBLIC_URL_LENGTH = 1024;

/**
 * A problem's `detail` (and each `errors[].detail`) is cut to this many characters, ending in `…`: a
 * detail quotes the client (a path, a value), and the quote is there to point at it, not to return it.
 */
export const MAX_DETAIL_LENGTH = 2048;

/** The reference page (/docs) is a fixed page of about 1 KB that loads its script: at most this many characters. */
export const MAX_DOCS_PAGE_LENGTH = 4096;

/** `detail` cut to MAX_DETAIL_LENGTH characters (code points, as JSON Schema's maxLength counts them). */
export function boundedDetail(detail: string): string {
  if (detail.length <= MAX_DETAIL_LENGTH) return detail;
  const codePoints = Array.from(detail);
  return codePoints.length <= MAX_DETAIL_LENGTH ? detail : `${codePoints.slice(0, MAX_DETAIL_LENGTH - 1).join('')}…`;
}
