import type { FastifyRequest } from 'fastify';
import { ApiError } from '../domain/errors.js';
import { hostHeaderOf, invalidHostDetail, isWellFormedHost } from './allowed-hosts.js';

/**
 * The absolute base for links: the configured public URL, else the request's
 * own scheme and host (X-Forwarded-* only when the app trusts a proxy). A
 * host that could inject anything into a link, or names no port there is,
 * is a 400; which hosts are served at all is ALLOWED_HOSTS' business
 * (allowed-hosts.ts), checked before the route runs.
 */
export function publicBaseUrl(request: FastifyRequest, configured: string | undefined): string {
  if (configured) return configured;
  const host = request.host;
  if (!isWellFormedHost(host)) throw new ApiError('bad_request', invalidHostDetail(hostHeaderOf(request)));
  // A trusted proxy's X-Forwarded-Proto is the scheme as given: only one a link can have.
  const scheme = request.protocol;
  if (scheme !== 'http' && scheme !== 'https') throw new ApiError('bad_request', 'the X-Forwarded-Proto header must be http or https');
  return `${scheme}://${host}`;
}
