import type { FastifyInstance } from 'fastify';
import { Counter, Gauge, type Registry } from 'prom-client';
import { ApiError } from '../domain/errors.js';
import type { NodeRole } from '../store/node-role.js';
import type { DatabaseOf } from './request-database.js';

export interface HealthRoutesOptions {
  databaseOf: DatabaseOf;
  role?: NodeRole;
  /** Where to report whether this node answers credit limits, and the reads retried on a new connection. */
  metrics?: Registry | undefined;
  /** The store, for its count of reads retried after a lost connection (PostgreSQL only). */
  store?: object;
}

/** Liveness and readiness probes; no authentication. */
export async function healthRoutes(app: FastifyInstance, options: HealthRoutesOptions): Promise<void> {
  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (request) => {
    let role = {};
    try {
      const db = options.databaseOf(request);
      await db.query('SELECT 1');
      // Which database this node reads (primary or standby), its lag, and whether it answers credit limits.
      if (options.role) role = await options.role.probe(db);
    } catch (error) {
      // Behind Patroni's synchronous-standby port, the usual reason right after a failover: say so.
      const reason = await options.role?.limitsOutageReason().catch(() => undefined);
      throw new ApiError('service_unavailable', reason ? `the database is unreachable: ${reason}` : 'the database is unreachable', {
        headers: { 'retry-after': '1' },
        cause: error,
      });
    }
    return { status: 'ready', database: 'reachable', ...role };
  });
  if (options.metrics) registerRoleMetrics(options.metrics, options.role, options.store);
}

function registerRoleMetrics(registry: Registry, role: NodeRole | undefined, store: object | undefined): void {
  if (role) {
    new Gauge({
      name: 'lending_api_serves_limits',
      help: 'Whether this node answers credit limits now: 1 on a primary or a synchronous standby, 0 on another standby or while its database is unreachable (e.g. no synchronous standby yet after a failover)',
      registers: [registry],
      async collect() {
        this.set(await role.current().then((state) => (state.serves_limits ? 1 : 0), () => 0));
      },
    });
  }
  const retries = () => (store as { connectionRetries?: unknown } | undefined)?.connectionRetries;
  if (typeof retries() === 'number') {
    new Counter({
      name: 'lending_api_db_read_retries_total',
      help: 'Reads run again on a new connection because theirs was lost under them (failover, HAProxy cutting sessions)',
      registers: [registry],
      collect() {
        this.reset();
        this.inc(Number(retries()));
      },
    });
  }
}
