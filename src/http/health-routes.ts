import type { FastifyInstance } from 'fastify';
import { ApiError } from '../domain/errors.js';
import type { NodeRole } from '../store/node-role.js';
import type { DatabaseOf } from './request-database.js';

/** Liveness and readiness probes; no authentication. */
export async function healthRoutes(app: FastifyInstance, options: { databaseOf: DatabaseOf; role?: NodeRole }): Promise<void> {
  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (request) => {
    let role = {};
    try {
      const db = options.databaseOf(request);
      await db.query('SELECT 1');
      // Which database this node reads (primary or standby), its lag, and whether it answers credit limits.
      if (options.role) role = await options.role.probe(db);
    } catch (error) {
      throw new ApiError('service_unavailable', 'the database is unreachable', {
        headers: { 'retry-after': '1' },
        cause: error,
      });
    }
    return { status: 'ready', database: 'reachable', ...role };
  });
}
