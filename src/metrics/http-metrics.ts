import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { Counter, Gauge, type Registry } from 'prom-client';
import type { Store } from '../store/store.js';
import { registerProblemMetrics } from './problem-metrics.js';
import { SeriesHistogram, type HistogramSeries } from './series-histogram.js';

export interface HttpMetricsOptions {
  registry: Registry;
  store: Store;
}

/** What a PostgreSQL store exposes about its pool (node-postgres `Pool`). */
interface PoolStats {
  totalCount: number;
  idleCount: number;
  waitingCount: number;
}

/**
 * Request counts and latency by route pattern and status, plus database pool
 * usage. Labels use the route pattern (`/api/methods/:uid/`), never the raw
 * path, so hostile URLs cannot blow up the number of series.
 */
export const httpMetrics = fp(
  async (app: FastifyInstance, { registry, store }: HttpMetricsOptions) => {
    const labelNames = ['method', 'route', 'status'] as const;
    // One labels object per series, made once: as many as there are series, which the route patterns bound.
    type Label = (typeof labelNames)[number];
    interface Series {
      readonly labels: Record<Label, string>;
      requests: number;
      readonly duration: HistogramSeries<Label>;
    }
    const series: Series[] = [];
    // Found by route pattern, method and status in turn: strings the router and the HTTP parser hand over
    // as the same objects each time (their hashes cached), where one key string joined per request cost
    // building, then hashing, a new string.
    const byRoute = new Map<string, Map<string, Map<number, Series>>>();
    new Counter({
      name: 'lending_api_http_requests_total',
      help: 'HTTP requests answered, by method, route pattern and status code',
      labelNames,
      registers: [registry],
      // Counted in a plain number per series and copied here when scraped: prom-client's inc
      // hashes and validates the labels on every request.
      collect() {
        this.reset();
        for (const { labels, requests } of series) this.inc(labels, requests);
      },
    });
    const duration = new SeriesHistogram({
      name: 'lending_api_http_request_duration_seconds',
      help: 'Time from receiving a request to finishing its response, by method, route pattern and status code',
      labelNames,
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    });

    // Callback style: an async hook costs a promise and a microtask turn per request.
    app.addHook('onResponse', (request, reply, done) => {
      const route = request.routeOptions.url ?? 'unmatched';
      const { method } = request;
      const status = reply.statusCode;
      let byMethod = byRoute.get(route);
      if (!byMethod) byRoute.set(route, (byMethod = new Map()));
      let byStatus = byMethod.get(method);
      if (!byStatus) byMethod.set(method, (byStatus = new Map()));
      let counted = byStatus.get(status);
      if (!counted) {
        const labels = { method, route, status: String(status) };
        counted = { labels, requests: 0, duration: duration.series(labels) };
        byStatus.set(status, counted);
        series.push(counted);
      }
      counted.requests += 1;
      duration.record(counted.duration, reply.elapsedTime / 1000);
      done();
    });
    registerProblemMetrics(app, registry);

    const pool = poolOf(store);
    if (pool) {
      new Gauge({
        name: 'lending_api_db_pool_connections',
        help: 'PostgreSQL pool connections: total open, idle, and requests waiting for one',
        labelNames: ['state'] as const,
        registers: [registry],
        collect() {
          this.set({ state: 'total' }, pool.totalCount);
          this.set({ state: 'idle' }, pool.idleCount);
          this.set({ state: 'waiting' }, pool.waitingCount);
        },
      });
    }
  },
  { name: 'lending-api-http-metrics' },
);

function poolOf(store: Store): PoolStats | undefined {
  const pool = (store as { pool?: Partial<PoolStats> }).pool;
  return pool && typeof pool.totalCount === 'number' ? (pool as PoolStats) : undefined;
}
