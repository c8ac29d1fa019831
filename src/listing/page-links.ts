import { MAX_PUBLIC_URL_LENGTH, MAX_REQUEST_HEAD_BYTES } from '../domain/answer-bounds.js';
import { redactApiKeys } from '../domain/key-shaped-text.js';
import { MAX_UID_LENGTH } from '../domain/record-uid.js';
import { MAX_CURSOR_LENGTH } from './cursor.js';

/**
 * A link's base: PUBLIC_URL (at most MAX_PUBLIC_URL_LENGTH), or the request's
 * `http(s)://` and host (a name of at most 253 characters, a trailing dot, a port).
 */
const MAX_BASE_URL_LENGTH = Math.max(MAX_PUBLIC_URL_LENGTH, 'https://'.length + 254 + ':65535'.length);
/**
 * `/api/…/` of a collection: its fixed names, and a nested one's parent uid
 * percent-encoded (at most 9 characters for each of its MAX_UID_LENGTH UTF-16
 * units: a 3-byte UTF-8 character).
 */
export const MAX_COLLECTION_PATH_LENGTH = 512 + 9 * MAX_UID_LENGTH;
/**
 * The parameters a link keeps are the request's (page and cursor aside),
 * decoded and form-encoded again: at most 3 characters for each character of
 * the query as sent (`!` → `%21`; `%FF` → U+FFFD → `%EF%BF%BD`; raw non-ASCII
 * is refused), and the query fits in the request's line.
 */
const MAX_KEPT_PARAMS_LENGTH = 3 * MAX_REQUEST_HEAD_BYTES;

/** The longest `next`/`previous`/`first` link: base, path, `?`, the kept parameters, `&cursor=` and a cursor (longer than `&page=` and 16 digits). */
export const MAX_LINK_LENGTH = MAX_BASE_URL_LENGTH + MAX_COLLECTION_PATH_LENGTH + '?'.length + MAX_KEPT_PARAMS_LENGTH + '&cursor='.length + MAX_CURSOR_LENGTH;

/** The longest `Link` header: three links, each `<…>; rel="…"`, joined by `, `. */
export const MAX_LINK_HEADER_LENGTH = 3 * (MAX_LINK_LENGTH + '<>; rel="next"'.length) + 2 * ', '.length;

export interface PageLinks {
  readonly next: string | null;
  readonly previous: string | null;
  readonly first: string;
  /** RFC 8288 `Link` header value with next, prev and first. */
  readonly header: string;
}

/**
 * Absolute links to the neighbouring pages that keep every other parameter
 * of the request, in the client's order.
 */
export function buildPageLinks(
  collectionUrl: string,
  params: ReadonlyArray<readonly [string, string]>,
  page: number,
  lastPage: number,
): PageLinks {
  const withPage = linkWithParam(collectionUrl, params, 'page');
  const linkTo = (target: number) => withPage(String(target));
  const next = page < lastPage ? linkTo(page + 1) : null;
  const previous = page > 1 ? linkTo(page - 1) : null;
  return withHeader(next, previous, linkTo(1));
}

/**
 * Links of a keyset page: the same parameters with `cursor` set to the
 * cursor after the last row (next) or before the first (previous); `first`
 * is the empty cursor, the start of the walk.
 */
export function buildCursorLinks(
  collectionUrl: string,
  params: ReadonlyArray<readonly [string, string]>,
  cursors: { readonly next: string | null; readonly previous: string | null },
): PageLinks {
  const linkTo = linkWithParam(collectionUrl, params, 'cursor');
  return withHeader(cursors.next === null ? null : linkTo(cursors.next), cursors.previous === null ? null : linkTo(cursors.previous), linkTo(''));
}

// What form encoding (URLSearchParams) leaves as is: a value of only these is its own encoding.
const FORM_SAFE = /^[A-Za-z0-9*._-]*$/;

/**
 * The link to the collection with every parameter but `name` as the client
 * sent them and `name` set last, as URLSearchParams `set` would place it;
 * the other parameters are encoded once for all the links of a response.
 * A key-shaped name or value the client sent is redacted (redactApiKeys):
 * links are answers, and shared caches and logs keep them.
 */
function linkWithParam(collectionUrl: string, params: ReadonlyArray<readonly [string, string]>, name: string): (value: string) => string {
  const kept = params.filter(([param]) => param !== name).map(([param, value]): [string, string] => [redactApiKeys(param), redactApiKeys(value)]);
  const others = new URLSearchParams(kept).toString();
  const prefix = `${collectionUrl}?${others}${others === '' ? '' : '&'}`;
  return (value) => prefix + (FORM_SAFE.test(value) ? `${name}=${value}` : new URLSearchParams([[name, value]]).toString());
}

function withHeader(next: string | null, previous: string | null, first: string): PageLinks {
  let header = '';
  if (next !== null) header += `<${next}>; rel="next", `;
  if (previous !== null) header += `<${previous}>; rel="prev", `;
  header += `<${first}>; rel="first"`;
  return { next, previous, first, header };
}
