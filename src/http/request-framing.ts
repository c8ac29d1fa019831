import type { FastifyRequest } from 'fastify';
import { ApiError } from '../domain/errors.js';

/**
 * Transfer-Encoding is HTTP/1.1's: an HTTP/1.0 request that has one is
 * framed in a way its own version does not define, and a proxy in front may
 * read its body by another rule than Node does (RFC 9112 §6.1: treat the
 * framing as faulty, and close the connection after the answer). It is
 * refused (400) on every route, and its connection closed, so nothing after
 * it is read with framing that two readers could disagree on.
 */
export function refuseTransferEncodingOnHttp10(request: FastifyRequest): void {
  const raw = request.raw;
  if (raw.httpVersionMinor !== 0 || raw.httpVersionMajor !== 1 || raw.headers['transfer-encoding'] === undefined) return;
  throw new ApiError('bad_request', 'send Transfer-Encoding only with HTTP/1.1: this HTTP/1.0 request has one; frame its body with a Content-Length', {
    headers: { connection: 'close' },
  });
}

// Printable ASCII that RFC 9112's request-target (RFC 3986's path and query) never holds raw; Node's parser
// already refuses controls, spaces and non-ASCII bytes. `#` starts a fragment, which a client never sends.
const FORBIDDEN_IN_TARGET = /["#<>[\\\]^`{|}]/;
// An absolute-form target (`http://[::1]:3000/…`, RFC 9112 §3.2.2) may hold an IPv6 literal's brackets in its authority.
const ABSOLUTE_FORM_AUTHORITY = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/?]*/;

/**
 * A request-target holding a byte RFC 9112 forbids there — a fragment (`#`),
 * or `"`, `<`, `>`, `\`, `^`, `` ` ``, `{`, `|`, `}`, `[`, `]` unencoded — is
 * refused (400) on every route: the router would otherwise read
 * `/api/methods/#` as the list, and another reader (a proxy, a log) could read
 * the same bytes as another resource.
 */
export function refuseForbiddenTargetBytes(request: FastifyRequest): void {
  const target = request.raw.url ?? '';
  if (!FORBIDDEN_IN_TARGET.test(target)) return;
  const forbidden = FORBIDDEN_IN_TARGET.exec(target.replace(ABSOLUTE_FORM_AUTHORITY, (authority) => authority.replace(/[[\]]/g, '')));
  if (forbidden === null) return;
  const byte = forbidden[0];
  const what = byte === '#' ? "'#' (a fragment, which is never sent to a server)" : `'${byte}'`;
  throw new ApiError(
    'bad_request',
    `the request-target holds ${what}, which RFC 9112 does not allow in it; percent-encode it (${percentEncoded(byte)}) if it is part of a value`,
  );
}

const percentEncoded = (byte: string) => `%${byte.charCodeAt(0).toString(16).toUpperCase()}`;
