import { loadConfig } from '../../config.js';
import { startDeliveryWorker } from '../../delivery-worker.js';
import { closeOnSignals } from '../../server.js';
import { print, type OutputOptions } from '../output.js';
import { tuneHeapForServing } from '../serving-heap.js';
import { terminalLogDestination } from '../terminal-log.js';

export interface DeliverFlags extends OutputOptions {
  logLevel?: string;
  webhookAllowPrivate?: boolean;
}

/** `deliver`: delivers webhooks until SIGTERM/SIGINT, serving no API. */
export async function runDeliver(flags: DeliverFlags): Promise<void> {
  const config = loadConfig(process.env, {
    LOG_LEVEL: flags.logLevel,
    WEBHOOK_ALLOW_PRIVATE: flags.webhookAllowPrivate ? '1' : undefined,
    WEBHOOK_DELIVERY: 'on',
  });
  tuneHeapForServing();
  const worker = await startDeliveryWorker(config, terminalLogDestination(flags));
  closeOnSignals(worker, (message) => process.stderr.write(`lending-api: ${message}\n`));
  print(
    flags,
    { delivering: true, database: worker.store.description, metrics: worker.metricsUrl ?? null },
    `lending-api delivering webhooks (${worker.store.description}), serving no API${worker.metricsUrl ? `; metrics on ${worker.metricsUrl}` : ''}`,
  );
}
