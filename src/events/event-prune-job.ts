import type { FastifyBaseLogger } from 'fastify';
import type { Store } from '../store/store.js';
import { ensureDayPartitions } from './event-partitions.js';
import { pruneEvents } from './event-prune.js';

const READ_ONLY_TRANSACTION = '25006';

/**
 * `serve` makes the day partitions ahead at start, and every `intervalMs`
 * makes them again and prunes events older than EVENT_RETENTION_DAYS, with
 * their finished deliveries and old attempts: expired day partitions are
 * dropped, what is left past the retention is deleted in batches of 1000
 * rows per organization (src/events/event-prune.ts). Every node runs it: a
 * repeat does nothing. A failure is logged and the next run tries again; a
 * standby's node skips quietly.
 */
export function scheduleEventPrune(store: Store, retentionDays: number, intervalMs: number, log: FastifyBaseLogger): { stop(): void } {
  let running = false;
  const run = (work: () => Promise<void>) => {
    if (running) return;
    running = true;
    work()
      .catch((error: unknown) => {
        if ((error as { code?: unknown } | undefined)?.code === READ_ONLY_TRANSACTION) return;
        log.warn({ err: error }, 'could not prune old events; will retry');
      })
      .finally(() => (running = false));
  };
  const first = setTimeout(() => run(async () => void (await ensureDayPartitions(store))), 0);
  const timer = setInterval(
    () =>
      run(async () => {
        const counts = await pruneEvents(store, retentionDays);
        if (counts.partitions + counts.events + counts.attempts + counts.healthBuckets > 0) log.info(counts, `pruned events older than ${retentionDays} days`);
      }),
    intervalMs,
  );
  first.unref();
  timer.unref();
  return {
    stop: () => {
      clearTimeout(first);
      clearInterval(timer);
    },
  };
}
