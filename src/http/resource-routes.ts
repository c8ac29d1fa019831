import type { FastifyInstance, FastifyRequest } from 'fastify';
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
import { publicBaseUrl } from './public-url.js';
import { authenticateWithLimits } from './rate-limits.js';

export interface ResourceRoutesOptions {
  store: Store;
  resources: readonly ResourceDefinition[];
  publicUrl: string | undefined;
  authCache?: AuthCache | undefined;
  listCache?: ListCache | undefined;
}

/**
 * `GET /api/{path}/` and `GET /api/{path}/{uid}/` for every resource, behind
 * Basic auth. Other methods get 405 from methodNotAllowedForEveryRoute, with
 * no credentials needed: it tells nothing about any organization.
 */
export async function resourceRoutes(app: FastifyInstance, options: ResourceRoutesOptions): Promise<void> {
  const { store, resources, publicUrl, authCache, listCache } = options;
  const cursorSecret = new CursorSecret(store);

  await app.register(async (authenticated) => {
    authenticateWithLimits(authenticated, basicAuthHook(store, authCache));
    // Callback style: an async hook costs a promise and a microtask turn per request.
    authenticated.addHook('onSend', (_request, reply, payload, done) => {
      reply.header('cache-control', 'no-store');
      done(null, payload);
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

function rawQueryOf(request: FastifyRequest): string {
  const url = request.raw.url ?? '';
  const start = url.indexOf('?');
  return start === -1 ? '' : url.slice(start + 1);
}
