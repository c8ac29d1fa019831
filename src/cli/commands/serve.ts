import type { Command } from 'commander';
import cluster from 'node:cluster';
import { loadConfig } from '../../config.js';
import { print, type OutputOptions } from '../output.js';
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
}

export function addServeFlags(command: Command): Command {
  return command
    .option('--port <port>', 'port to listen on (PORT, default 3000)')
    .option('--host <host>', 'address to bind (HOST, default 127.0.0.1)')
    .option('--public-url <url>', 'base URL for links (PUBLIC_URL)')
    .option('--trust-proxy [hops|addresses]', 'believe X-Forwarded-* from a hop count (bare flag: 1) or from these proxy addresses/CIDRs (TRUST_PROXY)')
    .option('--rate-limit <n>', 'requests per minute per API key, 0 = off (RATE_LIMIT_PER_MINUTE)')
    .option('--log-level <level>', 'fatal, error, warn, info, debug, trace or silent (LOG_LEVEL)')
    .option('--workers <n>', 'HTTP worker processes sharing the port; PostgreSQL only (WORKERS, default 1)')
    .option('--json', 'machine-readable start-up line');
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
  });
}

export function registerServe(program: Command): void {
  addServeFlags(program.command('serve').description('run the HTTP service')).action(async (flags: ServeFlags) => {
    const config = configFromFlags(flags);
    tuneHeapForServing();
    // Loaded here, not at the top: `--help` need not load the server.
    const [{ runClusterPrimary }, { closeOnSignals, startServer }] = await Promise.all([import('../../cluster.js'), import('../../server.js')]);
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
    const server = await startServer(config, undefined, terminalLogDestination(flags));
    closeOnSignals(server, log);
    if (cluster.isWorker) return;
    print(
      flags,
      { url: server.url, database: server.store.description, metrics: server.metricsUrl ?? null },
      `lending-api listening on ${server.url} (${server.store.description})${server.metricsUrl ? `; metrics on ${server.metricsUrl}` : ''}`,
    );
  });
}
