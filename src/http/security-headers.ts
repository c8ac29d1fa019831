import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { FrameAncestors } from '../domain/frame-ancestors-setting.js';
import { JSON_CSP, SECURITY_HEADERS } from '../domain/header-values.js';

export { SECURITY_HEADERS };

/** The headers of a JSON (or problem+json) answer. */
export const JSON_SECURITY_HEADERS: Readonly<Record<string, string>> = { ...SECURITY_HEADERS, 'content-security-policy': JSON_CSP };

const SECURITY_HEADER_ENTRIES: readonly (readonly [string, string])[] = Object.entries(SECURITY_HEADERS);

export interface SecurityHeadersOptions {
  /** The origins whose pages may frame the portal (PORTAL_FRAME_ANCESTORS); none when absent. */
  readonly portalFrameAncestors?: FrameAncestors | undefined;
}

/**
 * The portal's Content-Security-Policy (docs/portal.md "Embedding and
 * security"): everything from this origin, nothing inline, no eval, no other
 * origin (no CDN, no web fonts), and framed only by PORTAL_FRAME_ANCESTORS
 * (`'none'` when it lists none).
 */
export function portalCsp(frameAncestors: FrameAncestors): string {
  const ancestors = frameAncestors.length > 0 ? frameAncestors.join(' ') : "'none'";
  return (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; " +
    `manifest-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors ${ancestors}`
  );
}

/** Whether a request target is the portal's: `/portal`, or under `/portal/` (a query or not). */
function isPortalTarget(url: string): boolean {
  return url.startsWith('/portal') && (url.length === 7 || url[7] === '/' || url[7] === '?');
}

/**
 * Headers that keep browsers from sniffing, framing or leaking anything the
 * service sends. Every answer under /portal/ (pages, assets, redirects and
 * every refusal, 405 and 404 included) carries the portal's policy instead
 * of the API's: its CSP, and X-Frame-Options only when no origin may frame it.
 */
export const securityHeaders = fp(
  async (app: FastifyInstance, options: SecurityHeadersOptions) => {
    const ancestors = options.portalFrameAncestors ?? [];
    const portalPolicy = portalCsp(ancestors);
    const portalFramed = ancestors.length > 0;
    // Callback style: an async hook costs a promise and a microtask turn per request.
    app.addHook('onSend', (request, reply, payload, done) => {
      // The names and values listed once, not by Object.keys on every answer (what reply.headers does).
      for (const [name, value] of SECURITY_HEADER_ENTRIES) reply.header(name, value);
      if (isPortalTarget(request.url)) {
        reply.header('content-security-policy', portalPolicy);
        if (portalFramed) reply.removeHeader('x-frame-options');
      } else if (!reply.hasHeader('content-security-policy') && !String(reply.getHeader('content-type') ?? '').startsWith('text/html')) {
        reply.header('content-security-policy', JSON_CSP);
      }
      done(null, payload);
    });
  },
  { name: 'lending-api-security-headers' },
);
