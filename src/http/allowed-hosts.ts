import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import { hostIsAllowed, parseHost, type AllowedHosts } from '../domain/allowed-hosts-setting.js';
import { ApiError } from '../domain/errors.js';
import { OPENAPI_PATH } from './api-reference-routes.js';

/**
 * An onRequest hook refusing (400 `bad_request`, naming the header) a
 * request to an /api/ route whose Host — or X-Forwarded-Host, from a
 * trusted proxy — is malformed or not allowed: links are built from it, and
 * a shared cache would hand a poisoned one to everyone. Health probes and
 * the API reference answer whatever the Host: they carry no link and no
 * data, and load balancers probe them by address. So do the 405 and 404
 * answers. An HTTP/1.0 request without a Host is left to its route.
 */
export function refuseDisallowedHosts(allowed: AllowedHosts) {
  // The Host values found served so far: a client sends the same one on every request, and parsing it
  // costs a regular expression and a few strings (a microsecond a request). A served one is served on
  // every route, so a request naming it needs no route check either. Bounded: with `*` or a `.domain`
  // pattern a client may name any number of them; past the bound the others are checked every time.
  const served = new Set<string>();
  return (request: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction): void => {
    const host = request.host;
    if (host && !served.has(host) && hostChecked(request)) {
      const header = hostHeaderOf(request);
      const parsed = parseHost(host);
      if (!parsed) throw new ApiError('bad_request', invalidHostDetail(header));
      if (!hostIsAllowed(parsed.name, allowed)) {
        throw new ApiError('bad_request', `the ${header} header names a host this service does not serve; its operator lists the served ones in ALLOWED_HOSTS`);
      }
      if (served.size < MAX_SERVED_HOSTS_REMEMBERED) served.add(host);
    }
    done();
  };
}

export const MAX_SERVED_HOSTS_REMEMBERED = 256;

// The Host values found well formed so far, for the links (public-url.ts), which check every list's host again.
const wellFormed = new Set<string>();

/** Whether `host` is a host name (and port) parseHost accepts; the answers for the first values seen are remembered. */
export function isWellFormedHost(host: string): boolean {
  if (wellFormed.has(host)) return true;
  if (!parseHost(host)) return false;
  if (wellFormed.size < MAX_SERVED_HOSTS_REMEMBERED) wellFormed.add(host);
  return true;
}

export function invalidHostDetail(header: string): string {
  return `the ${header} header is not a valid host name (and port, 1–65535)`;
}

/** Which header the request's host came from: X-Forwarded-Host when a trusted proxy's won, else Host. */
export function hostHeaderOf(request: FastifyRequest): 'Host' | 'X-Forwarded-Host' {
  return request.headers['x-forwarded-host'] !== undefined && request.host !== request.headers.host ? 'X-Forwarded-Host' : 'Host';
}

function hostChecked(request: FastifyRequest): boolean {
  if (request.is404) return false;
  const route = request.routeOptions;
  return route.url !== undefined && route.url.startsWith('/api/') && route.url !== OPENAPI_PATH && route.config.answersMethodNotAllowed !== true;
}
