import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { JSON_CSP, SECURITY_HEADERS } from '../domain/header-values.js';

export { SECURITY_HEADERS };

/** The headers of a JSON (or problem+json) answer. */
export const JSON_SECURITY_HEADERS: Readonly<Record<string, string>> = { ...SECURITY_HEADERS, 'content-security-policy': JSON_CSP };

const SECURITY_HEADER_ENTRIES: readonly (readonly [string, string])[] = Object.entries(SECURITY_HEADERS);

/** Headers that keep browsers from sniffing, framing or leaking anything the API sends. */
export const securityHeaders = fp(
  async (app: FastifyInstance) => {
    // Callback style: an async hook costs a promise and a microtask turn per request.
    app.addHook('onSend', (_request, reply, payload, done) => {
      // The names and values listed once, not by Object.keys on every answer (what reply.headers does).
      for (const [name, value] of SECURITY_HEADER_ENTRIES) reply.header(name, value);
      if (!reply.hasHeader('content-security-policy') && !String(reply.getHeader('content-type') ?? '').startsWith('text/html')) {
        reply.header('content-security-policy', JSON_CSP);
      }
      done(null, payload);
    });
  },
  { name: 'lending-api-security-headers' },
);
