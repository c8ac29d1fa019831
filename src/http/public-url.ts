import type { FastifyRequest } from 'fastify';
import { ApiError } from '../domain/errors.js';

// Host names, IPv4/IPv6 literals and a port: nothing that could smuggle a
// path or another URL into the links we build from it.
const SAFE_HOST = /^(?:[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.?|\[[0-9A-Fa-f:.]+\])(?::(\d{1,5}))?$/;
const MAX_PORT = 65_535;

/**
 * The absolute base for links: the configured public URL, else the request's
 * own scheme and host (X-Forwarded-* only when the app trusts a proxy).
 */
export function publicBaseUrl(request: FastifyRequest, configured: string | undefined): string {
  if (configured) return configured;
  const host = request.host;
  const match = SAFE_HOST.exec(host);
  if (!match || Number(match[1] ?? 0) > MAX_PORT) throw new ApiError('bad_request', 'the Host header is not a valid host name (and port, 1–65535)');
  return `${request.protocol}://${host}`;
}
