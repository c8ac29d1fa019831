import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { AuthCache } from '../auth/auth-cache.js';
import { basicAuthHook, requireAuth } from '../auth/basic-auth-hook.js';
import { ListEngine, type ListCache } from '../listing/list-engine.js';
import { collectionPathOf, type ResourceDefinition } from '../listing/resource-definition.js';
import { publicBaseUrl } from './public-url.js';
import { authenticateWithLimits } from '../rate-limits/rate-limits.js';
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
  const engine = new ListEngine({ listCache });

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
        authenticated.get<{ Params: { uid: string } }>(`/api/${collectionPathOf(resource, ':uid')}/`, (request, reply) => {
          const { orgId } = requireAuth(request);
          const baseUrl = publicBaseUrl(request, publicUrl);
          return engine.answerList(databaseOf(request), { resource, orgId, rawQuery: rawQueryOf(request), baseUrl, parentUid: request.params.uid }, reply);
        });
        continue;
      }
      const collectionPath = `/api/${resource.path}/`;
      // Not async: it returns the engine's promise as is, where an async wrapper would add a promise
      // and two microtask turns to adopt it (a throw here reaches the error handler all the same).
      authenticated.get(collectionPath, (request, reply) => {
        const { orgId } = requireAuth(request);
        return engine.answerList(databaseOf(request), { resource, orgId, rawQuery: rawQueryOf(request), baseUrl: publicBaseUrl(request, publicUrl) }, reply);
      });
      authenticated.get<{ Params: { uid: string } }>(`${collectionPath}:uid/`, (request) => {
        const { orgId } = requireAuth(request);
        return engine.retrieve(databaseOf(request), resource, orgId, request.params.uid, rawQueryOf(request));
      });
    }
  });
}

function rawQueryOf(request: FastifyRequest): string {
  const url = request.raw.url ?? '';
  const start = url.indexOf('?');
  return start === -1 ? '' : url.slice(start + 1);
}
