import cluster, { type Worker } from 'node:cluster';
import { AggregatorRegistry } from 'prom-client';
import { ConfigError, type Config } from './config.js';
import { startMetricsServer, type MetricsServer } from './metrics/metrics-server.js';

export interface ClusterHandle {
  /** The address the workers listen on (they share one port). */
  readonly url: string;
  readonly metricsUrl: string | undefined;
}

/**
 * The primary of `serve --workers N`: forks N processes that each run the
 * whole server on one shared port (node:cluster hands out connections), keeps
 * that many alive, serves the workers' summed metrics, and on SIGTERM/SIGINT
 * passes the signal on and exits once every worker has drained.
 */
export async function runClusterPrimary(config: Config, log: (message: string) => void): Promise<ClusterHandle> {
  if (config.store.kind !== 'postgres') {
    throw new ConfigError('WORKERS', 'above 1 needs PostgreSQL (DATABASE_URL=postgres://…): the embedded store belongs to one process');
  }
  let stopping = false;
  let failedAtStart: ((error: Error) => void) | undefined;
  const listening = new Set<number>();

  const fork = (): Worker => cluster.fork();
  cluster.on('listening', (worker) => listening.add(worker.id));
  cluster.on('exit', (worker, code, signal) => {
    const started = listening.delete(worker.id);
    if (stopping) {
      if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(0);
      return;
    }
    if (!started) {
      failedAtStart?.(new Error(`a worker exited before listening (${signal ?? `code ${code}`}); see its message above`));
      return;
    }
    log(`worker ${worker.process.pid} died (${signal ?? `code ${code}`}); starting another`);
    fork();
  });

  const url = await new Promise<string>((resolve, reject) => {
    failedAtStart = (error) => {
      stopping = true;
      for (const worker of Object.values(cluster.workers ?? {})) worker?.kill('SIGTERM');
      reject(error);
    };
    let address: string | undefined;
    cluster.on('listening', (_worker, info) => {
      address ??= `http://${info.address ?? config.host}:${info.port}`;
      if (listening.size === config.workers) {
        failedAtStart = undefined;
        resolve(address);
      }
    });
    for (let i = 0; i < config.workers; i += 1) fork();
  });

  let metricsServer: MetricsServer | undefined;
  if (config.metricsPort !== undefined) {
    const aggregator = new AggregatorRegistry();
    metricsServer = await startMetricsServer(
      { contentType: aggregator.contentType, metrics: () => aggregator.clusterMetrics() },
      config.metricsPort,
      config.metricsHost,
    );
  }

  const shutdown = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    log(`${signal} received: stopping ${config.workers} workers after their in-flight requests`);
    void metricsServer?.close();
    for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill('SIGTERM');
    // A worker that cannot finish in time is cut off by its own shutdown timeout;
    // this is the last resort if one hangs anyway.
    setTimeout(() => process.exit(1), config.shutdownTimeoutMs + 5000).unref();
  };
  process.on('SIGTERM', shutdown);
  process.on('SIGINT', shutdown);
  return { url, metricsUrl: metricsServer?.url };
}
