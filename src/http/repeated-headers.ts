import type { FastifyRequest } from 'fastify';
import { ApiError } from '../domain/errors.js';

/**
 * Host, Authorization, Content-Type and Idempotency-Key may each come once.
 * Node keeps the first `Host`, `Authorization` and `Content-Type` and joins
 * two `Idempotency-Key`s with a comma; a proxy in front may act on the last.
 * A request with more than one of any of them is refused (400), so the two
 * can never disagree about where the request goes, who is asking, how its
 * body is to be read, or which write it is. An
 * HTTP/1.1 request without a Host is refused too. Both as RFC 9112 §3.2
 * asks.
 */
export function rejectRepeatedHeaders(request: FastifyRequest): void {
  const raw = request.raw.rawHeaders;
  let hosts = 0;
  let authorizations = 0;
  let contentTypes = 0;
  let idempotencyKeys = 0;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] ?? '';
    // The length first: lower-casing every header name of every request costs a string each.
    if (name.length !== 4 && name.length !== 12 && name.length !== 13 && name.length !== 15) continue;
    // Every request has a Host, nearly always spelled one of these two ways: no lower-cased copy for it.
    const lower = name === 'Host' || name === 'host' ? 'host' : name.toLowerCase();
    if (lower === 'host') hosts += 1;
    else if (lower === 'authorization') authorizations += 1;
    else if (lower === 'content-type') contentTypes += 1;
    else if (lower === 'idempotency-key') idempotencyKeys += 1;
  }
  if (hosts === 0 && request.raw.httpVersionMinor >= 1) throw new ApiError('bad_request', 'send a Host header: HTTP/1.1 requires one');
  if (hosts > 1) throw repeated('Host', hosts);
  if (authorizations > 1) throw repeated('Authorization', authorizations);
  if (contentTypes > 1) throw repeated('Content-Type', contentTypes);
  if (idempotencyKeys > 1) throw repeated('Idempotency-Key', idempotencyKeys);
}

function repeated(header: string, count: number): ApiError {
  return new ApiError('bad_request', `send one ${header} header; this request has ${count}`);
}
