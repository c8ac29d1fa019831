import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AuthCache } from '../auth/auth-cache.js';
import { basicAuthHook, requireAuth } from '../auth/basic-auth-hook.js';
import type { ListCache } from '../listing/list-cache.js';
import { listRecords, retrieveRecord } from '../listing/list-records.js';
import { CursorSecret } from '../listing/cursor-secret.js';
import { listCursorPage } from '../listing/list-cursor-page.js';
import { buildCursorLinks, buildPageLinks } from '../listing/page-links.js';
import { scopeToParent } from '../listing/parent-scope.js';
import { parseListQuery, type ListQuery } from '../listing/query-parser.js';
import { collectionPathOf, type ResourceDefinition } from '../listing/resource-definition.js';
import type { Queryable } from '../store/store.js';
import { ApiError } from '../domain/errors.js';
import { truncate } from '../listing/value-parsers.js';
import { publicBaseUrl } from './public-url.js';
import { authenticateWithLimits } from './rate-limits.js';
import type { DatabaseOf } from './request-database.js';

export interface ResourceRoutesOptions {
  /** Each request's view of the store (within its database budget). */
  databaseOf: DatabaseOf;
  resources: readonly ResourceDefinition[];
  publicUrl: string | undefined;
  authCache?: AuthCache | undefined;
  listCache?: ListCache | undefined;
}

/**
 * `GET /api/{path}/` and `GET /api/{path}/{uid}/` for every resource (a
 * nested one: `GET /api/{parent path}/{uid}/{path}/` only), behind Basic auth. Other methods get 405 from methodNotAllowedForEveryRoute, with
 * no credentials needed: it tells nothing about any organization.
 */
export async function resourceRoutes(app: FastifyInstance, options: ResourceRoutesOptions): Promise<void> {
  const { databaseOf, resources, publicUrl, authCache, listCache } = options;
  const cursorSecret = new CursorSecret();

  await app.register(async (authenticated) => {
    authenticateWithLimits(authenticated, basicAuthHook(databaseOf, authCache));
    // Callback style: an async hook costs a promise and a microtask turn per request.
    authenticated.addHook('onSend', (_request, reply, payload, done) => {
      reply.header('cache-control', 'no-store');
      done(null, payload);
    });

    for (const resource of resources) {
      if (resource.parent) {
        // A nested collection: only its list, under one parent record.
        authenticated.get<{ Params: { uid: string } }>(`/api/${collectionPathOf(resource, ':uid')}/`, async (request, reply) => {
          const auth = requireAuth(request);
          const parsed = parseListQuery(resource, rawQueryOf(request));
          const db = databaseOf(request);
          const query = await scopeToParent(db, resource, auth.orgId, request.params.uid, parsed);
          const collectionUrl = `${publicBaseUrl(request, publicUrl)}/api/${collectionPathOf(resource, encodeURIComponent(request.params.uid))}/`;
          return listPage(db, resource, auth.orgId, query, collectionUrl, reply);
        });
        continue;
      }
      const collectionPath = `/api/${resource.path}/`;
      // Not async: it returns listPage's promise as is, where an async wrapper would add a promise
      // and two microtask turns to adopt it (a throw here reaches the error handler all the same).
      authenticated.get(collectionPath, (request, reply) => {
        const auth = requireAuth(request);
        const query = parseListQuery(resource, rawQueryOf(request));
        return listPage(databaseOf(request), resource, auth.orgId, query, publicBaseUrl(request, publicUrl) + collectionPath, reply);
      });
      authenticated.get<{ Params: { uid: string } }>(`${collectionPath}:uid/`, (request) => {
        const auth = requireAuth(request);
        refuseQueryParameters(rawQueryOf(request));
        return retrieveRecord(databaseOf(request), resource, auth.orgId, request.params.uid);
      });
    }
  });

  /** One page by number or by cursor, with its Link header. */
  async function listPage(db: Queryable, resource: ResourceDefinition, orgId: string, query: ListQuery, collectionUrl: string, reply: FastifyReply) {
    if (query.cursor !== undefined) {
      const page = await listCursorPage(db, resource, orgId, query, cursorSecret);
      const links = buildCursorLinks(collectionUrl, query.params, page);
      reply.header('link', links.header);
      return { count: page.count, next: links.next, previous: links.previous, items: page.items };
    }
    const result = await listRecords(db, resource, orgId, query, listCache);
    const links = buildPageLinks(collectionUrl, query.params, query.page, result.lastPage);
    reply.header('link', links.header);
    return { count: result.count, next: links.next, previous: links.previous, items: result.items };
  }
}

/** A record's own URL takes no parameters: one given is refused as a list refuses an unknown one, not silently ignored. */
function refuseQueryParameters(rawQuery: string): void {
  if (rawQuery === '') return;
  const names = [...new Set(new URLSearchParams(rawQuery).keys())];
  if (names.length === 0) return;
  throw ApiError.invalidParameters(names.map((param) => ({ param, detail: `'${truncate(param)}' is not a parameter: a single record's URL takes none` })));
}

function rawQueryOf(request: FastifyRequest): string {
  const url = request.raw.url ?? '';
  const start = url.indexOf('?');
  return start === -1 ? '' : url.slice(start + 1);
}
