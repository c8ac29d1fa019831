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
