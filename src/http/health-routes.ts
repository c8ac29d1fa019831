import type { FastifyInstance } from 'fastify';
import type { Store } from '../store/store.js';
import { ApiError } from '../domain/errors.js';
import type { NodeRole } from '../store/node-role.js';

/** Liveness and readiness probes; no authentication. */
export async function healthRoutes(app: FastifyInstance, options: { store: Store; role?: NodeRole }): Promise<void> {
  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async () => {
    let role = {};
    try {
      await options.store.ping();
      // Which database this node reads (primary or standby), its lag, and whether it answers credit limits.
      if (options.role) role = await options.role.probe();
    } catch (error) {
      throw new ApiError('service_unavailable', 'the database is unreachable', {
        headers: { 'retry-after': '1' },
        cause: error,
      });
    }
    return { status: 'ready', database: 'reachable', ...role };
  });
}
