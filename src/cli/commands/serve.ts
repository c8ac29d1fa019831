import cluster from 'node:cluster';
import { loadConfig } from '../../config.js';
import { closeOnSignals, startServer, type RunningServer } from '../../server.js';
import { runClusterPrimary } from '../../cluster.js';
import { print, type OutputOptions } from '../output.js';
import { assertPortFree, listenErrorMessage } from '../port-check.js';
import { tuneHeapForServing } from '../serving-heap.js';
import { terminalLogDestination } from '../terminal-log.js';

export interface ServeFlags extends OutputOptions {
  port?: string;
  host?: string;
  publicUrl?: string;
  trustProxy?: boolean | string;
  rateLimit?: string;
  logLevel?: string;
  workers?: string;
  webhookAllowPrivate?: boolean;
  deliver?: string;
}

export function configFromFlags(flags: ServeFlags) {
  return loadConfig(process.env, {
    PORT: flags.port,
    HOST: flags.host,
    PUBLIC_URL: flags.publicUrl,
    TRUST_PROXY: flags.trustProxy === true ? 'true' : flags.trustProxy || undefined,
    RATE_LIMIT_PER_MINUTE: flags.rateLimit,
    LOG_LEVEL: flags.logLevel,
    WORKERS: flags.workers,
    WEBHOOK_ALLOW_PRIVATE: flags.webhookAllowPrivate ? '1' : undefined,
    WEBHOOK_DELIVERY: flags.deliver,
  });
}

/** `serve`: runs the HTTP service, in this process or in `--workers` processes sharing the port. */
export async function runServe(flags: ServeFlags): Promise<void> {
  const config = configFromFlags(flags);
  // A worker shares the port its primary checked; the primary, or a lone server, checks before opening the store.
  if (!cluster.isWorker) await assertPortFree(config.host, config.port);
  tuneHeapForServing();
  const log = (message: string) => process.stderr.write(`lending-api: ${message}\n`);
  if (config.workers > 1 && cluster.isPrimary) {
    const primary = await runClusterPrimary(config, log);
    print(
      flags,
      { url: primary.url, workers: config.workers, metrics: primary.metricsUrl ?? null },
      `lending-api listening on ${primary.url} with ${config.workers} workers${primary.metricsUrl ? `; metrics on ${primary.metricsUrl}` : ''}`,
    );
    return;
  }
  const server = await startServer(config, undefined, terminalLogDestination(flags)).catch((error: unknown) => {
    throw listenErrorMessage(error, config.host, config.port);
  });
  closeOnSignals(server, log);
  if (cluster.isWorker) return;
  print(flags, { url: server.url, database: server.store.description, metrics: server.metricsUrl ?? null }, listeningLine(server));
}

/** What `serve` and `demo --serve` print once they listen: the API's URL, the store, and the metrics URL when METRICS_PORT is set. */
export function listeningLine(server: Pick<RunningServer, 'url' | 'store' | 'metricsUrl'>): string {
  return `lending-api listening on ${server.url} (${server.store.description})${server.metricsUrl ? `; metrics on ${server.metricsUrl}` : ''}`;
}
