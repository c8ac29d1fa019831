import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { ApiError } from '../domain/errors.js';
import type { NodeRole } from '../store/node-role.js';
import type { DatabaseOf } from './request-database.js';

export interface RealTimeGuardOptions {
  role: NodeRole;
  /** Route prefixes whose records carry real-time fields (credit limits: outstanding, balance). */
  paths: readonly string[];
  databaseOf: DatabaseOf;
}

/**
 * A node on a standby that is not guaranteed up to date (REPLICA_LIMITS=refuse)
 * answers 503 for credit limits instead of a possibly stale balance; other
 * records (payment methods) are answered from any standby. Runs after
 * authentication, so a client without valid credentials still gets 401.
 * Register it before the routes it guards: it attaches itself to each as it is added.
 */
export const realTimeGuard = fp(async (app: FastifyInstance, options: RealTimeGuardOptions) => {
  const guard = async (request: FastifyRequest) => {
    const state = await options.role.current(options.databaseOf(request));
    if (state.serves_limits) return;
    throw new ApiError(
      'service_unavailable',
      'this node reads a replica that is not guaranteed to be up to date, so it does not answer credit limits (real-time balances); ask a node on the primary or on the synchronous replica',
      { headers: { 'retry-after': '1' } },
    );
  };
  // Attached to the guarded routes only, as they are registered: the others pay no hook at all.
  app.addHook('onRoute', (route) => {
    if (!options.paths.some((path) => route.url.startsWith(path))) return;
    route.preHandler = [...[route.preHandler ?? []].flat(), guard];
  });
});
