import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../domain/errors.js';
import { readBundle, type BundleFile } from './portal-bundle.js';

export const PORTAL_PATH = '/portal/';

export interface PortalStaticRoutesOptions {
  /** The built portal (`dist/portal-app/`). */
  readonly directory: string;
}

/** How often a missing bundle is looked for again (after `npm run build` on a running server). */
const RETRY_MISSING_MS = 2000;
const IMMUTABLE = 'public, max-age=31536000, immutable';

/**
 * The portal's pages (SPEC §9): `GET /portal/<file>` answers that file of the
 * bundle, `/portal/assets/…` as immutable (their names carry a content hash);
 * every other path under `/portal/` answers index.html, never cached, and the
 * portal reads its path and query itself. Only files read at start are
 * served: no directory listing, and no path can leave the bundle. Every answer
 * under /portal/ carries the portal's CSP and framing policy (http/security-headers.ts).
 */
export async function portalStaticRoutes(app: FastifyInstance, options: PortalStaticRoutesOptions): Promise<void> {
  let bundle = readBundle(options.directory);
  let lookedAt = Date.now();
  const currentBundle = (): Map<string, BundleFile> => {
    if (!bundle && Date.now() - lookedAt >= RETRY_MISSING_MS) {
      lookedAt = Date.now();
      bundle = readBundle(options.directory);
    }
    if (bundle) return bundle;
    throw new ApiError(
      'service_unavailable',
      `the portal is not built: ${options.directory} has no index.html; run \`npm run build\` (or \`npm ci\`, which builds it)`,
    );
  };

  const serve = (request: FastifyRequest, reply: FastifyReply) => {
    const [rawPath = '', query] = splitOnce(request.raw.url ?? '', '?');
    // One route answers both, the router ignoring a trailing slash: the bare name is sent to the directory.
    if (rawPath === '/portal') return reply.code(301).header('location', `${PORTAL_PATH}${query === undefined ? '' : `?${query}`}`).send();
    const relative = relativePathOf(rawPath);
    const files = currentBundle();
    const file = files.get(relative);
    if (file) return send(request, reply, file, relative.startsWith('assets/') ? IMMUTABLE : 'no-store');
    if (relative.startsWith('assets/')) throw new ApiError('not_found', 'the portal has no such asset (an old link after an upgrade? reload the page)');
    return send(request, reply, files.get('index.html')!, 'no-store');
  };
  app.get(PORTAL_PATH, serve);
  app.get(`${PORTAL_PATH}*`, serve);
}

function send(request: FastifyRequest, reply: FastifyReply, file: BundleFile, cacheControl: string): FastifyReply {
  reply.header('content-type', file.contentType).header('cache-control', cacheControl);
  if (!file.gzipped) return reply.send(file.body);
  reply.header('vary', 'Accept-Encoding');
  if (!/\bgzip\b/i.test(String(request.headers['accept-encoding'] ?? ''))) return reply.send(file.body);
  return reply.header('content-encoding', 'gzip').send(file.gzipped);
}

/**
 * The path under /portal/ as a bundle key. A segment that is empty, `.`,
 * `..` (also percent-encoded), or holds a backslash or a NUL is refused: no
 * such name is in a bundle, and a path trying one is not a page either.
 */
function relativePathOf(rawPath: string): string {
  const rest = rawPath.slice(PORTAL_PATH.length);
  let decoded: string;
  try {
    decoded = decodeURIComponent(rest);
  } catch {
    throw new ApiError('bad_request', 'the path under /portal/ is not valid percent-encoded UTF-8');
  }
  const segments = decoded.split('/');
  if (segments.some((segment) => segment === '.' || segment === '..' || segment.includes('\\') || segment.includes('\u0000'))) {
    throw new ApiError('bad_request', 'a path under /portal/ may not hold `.` or `..` segments, backslashes or NUL');
  }
  return decoded;
}

function splitOnce(text: string, separator: string): [string, string | undefined] {
  const at = text.indexOf(separator);
  return at < 0 ? [text, undefined] : [text.slice(0, at), text.slice(at + 1)];
}
