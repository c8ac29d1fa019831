import type { FastifyInstance } from 'fastify';
import type { Store } from '../store/store.js';
import { ApiError } from '../domain/errors.js';

/** Liveness and readiness probes; no authentication. */
export async function healthRoutes(app: FastifyInstance, options: { store: Store }): Promise<void> {
  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async () => {
    try {
      await options.store.ping();
    } catch (error) {
      throw new ApiError('service_unavailable', 'the database is unreachable', {
        headers: { 'retry-after': '1' },
        cause: error,
      });
    }
    return { status: 'ready', database: 'reachable' };
  });
}
