import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AuthCache } from '../auth/auth-cache.js';
import { basicAuthHook, requireAuth } from '../auth/basic-auth-hook.js';
import type { ListCache } from '../listing/list-cache.js';
import { listRecords, retrieveRecord } from '../listing/list-records.js';
import { CursorSecret } from '../listing/cursor-secret.js';
import { listCursorPage } from '../listing/list-cursor-page.js';
import { buildCursorLinks, buildPageLinks } from '../listing/page-links.js';
import { parseListQuery } from '../listing/query-parser.js';
import type { ResourceDefinition } from '../listing/resource-definition.js';
import type { Store } from '../store/store.js';
import { ApiError } from '../domain/errors.js';
import { publicBaseUrl } from './public-url.js';
import { authenticateWithLimits } from './rate-limits.js';

export interface ResourceRoutesOptions {
  store: Store;
  resources: readonly ResourceDefinition[];
  publicUrl: string | undefined;
  authCache?: AuthCache | undefined;
  listCache?: ListCache | undefined;
}

export const ALLOWED_METHODS = 'GET, HEAD';
export const OTHER_METHODS = ['POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;

/** `GET /api/{path}/` and `GET /api/{path}/{uid}/` for every resource, behind Basic auth. */
export async function resourceRoutes(app: FastifyInstance, options: ResourceRoutesOptions): Promise<void> {
  const { store, resources, publicUrl, authCache, listCache } = options;
  const cursorSecret = new CursorSecret(store);

  // 405 needs no credentials: it tells nothing about any organization.
  for (const resource of resources) {
    for (const url of collectionPaths(resource)) {
      app.route({ method: [...OTHER_METHODS], url, handler: methodNotAllowed });
    }
  }

  await app.register(async (authenticated) => {
    authenticateWithLimits(authenticated, basicAuthHook(store, authCache));
    authenticated.addHook('onSend', async (_request, reply) => {
      reply.header('cache-control', 'no-store');
    });

    for (const resource of resources) {
      const collectionPath = `/api/${resource.path}/`;
      authenticated.get(collectionPath, async (request, reply) => {
        const auth = requireAuth(request);
        const query = parseListQuery(resource, rawQueryOf(request));
        const collectionUrl = publicBaseUrl(request, publicUrl) + collectionPath;
        if (query.cursor !== undefined) {
          const page = await listCursorPage(store, resource, auth.orgId, query, cursorSecret);
          const links = buildCursorLinks(collectionUrl, query.params, page);
          reply.header('link', links.header);
          return { count: page.count, next: links.next, previous: links.previous, items: page.items };
        }
        const result = await listRecords(store, resource, auth.orgId, query, listCache);
        const links = buildPageLinks(collectionUrl, query.params, query.page, result.lastPage);
        reply.header('link', links.header);
        return { count: result.count, next: links.next, previous: links.previous, items: result.items };
      });
      authenticated.get<{ Params: { uid: string } }>(`${collectionPath}:uid/`, async (request) => {
        const auth = requireAuth(request);
        return retrieveRecord(store, resource, auth.orgId, request.params.uid);
      });
    }
  });
}

function collectionPaths(resource: ResourceDefinition): string[] {
  return [`/api/${resource.path}/`, `/api/${resource.path}/:uid/`];
}

export async function methodNotAllowed(request: FastifyRequest, _reply: FastifyReply): Promise<never> {
  throw new ApiError('method_not_allowed', `${request.method} is not allowed here; use GET`, {
    headers: { allow: ALLOWED_METHODS },
  });
}

function rawQueryOf(request: FastifyRequest): string {
  const url = request.raw.url ?? '';
  const start = url.indexOf('?');
  return start === -1 ? '' : url.slice(start + 1);
}
