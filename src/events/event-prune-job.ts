import type { FastifyBaseLogger } from 'fastify';
import type { Store } from '../store/store.js';
import { pruneEvents } from './event-prune.js';

const READ_ONLY_TRANSACTION = '25006';

/**
 * `serve` prunes events older than EVENT_RETENTION_DAYS, with their finished
 * deliveries and old attempts, every `intervalMs`, in batches of 1000 rows
 * per organization. Every node runs it: a repeat deletes nothing. A failure
 * is logged and the next run tries again; a standby's node skips quietly.
 */
export function scheduleEventPrune(store: Store, retentionDays: number, intervalMs: number, log: FastifyBaseLogger): { stop(): void } {
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    pruneEvents(store, retentionDays)
      .then(
        (counts) => {
          if (counts.events + counts.attempts + counts.healthBuckets > 0) log.info(counts, `pruned events older than ${retentionDays} days`);
        },
        (error: unknown) => {
          if ((error as { code?: unknown } | undefined)?.code === READ_ONLY_TRANSACTION) return;
          log.warn({ err: error }, 'could not prune old events; will retry');
        },
      )
      .finally(() => (running = false));
  }, intervalMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
