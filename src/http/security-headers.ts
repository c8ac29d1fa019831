import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';

// For JSON nothing may be loaded, framed or executed; HTML pages (API docs)
// set their own policy.
const JSON_CSP = "default-src 'none'; frame-ancestors 'none'";

/** Headers that keep browsers from sniffing, framing or leaking anything the API sends. */
export const securityHeaders = fp(
  async (app: FastifyInstance) => {
    app.addHook('onSend', async (_request, reply, payload) => {
      reply.header('x-content-type-options', 'nosniff');
      reply.header('x-frame-options', 'DENY');
      reply.header('referrer-policy', 'no-referrer');
      const type = String(reply.getHeader('content-type') ?? '');
      if (!reply.hasHeader('content-security-policy') && !type.startsWith('text/html')) {
        reply.header('content-security-policy', JSON_CSP);
      }
      return payload;
    });
  },
  { name: 'lending-api-security-headers' },
);
