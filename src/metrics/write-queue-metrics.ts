import { Counter, Gauge, type Registry } from 'prom-client';
import type { WriteQueueSnapshot } from '../ledger/queued-work.js';

/** What the ledger's write queue tells about itself (LedgerWriter.stats). */
export interface WriteQueueStats {
  readonly stats: WriteQueueSnapshot;
}

/**
 * The write queue's depth, its transactions in flight, the writes it refused
 * as overloaded, how long writes wait in it (total wait and count: their
 * rates give the average wait over any window) and the running average of a
 * write transaction, from which the queue estimates a newcomer's wait.
 */
export function registerWriteQueueMetrics(registry: Registry, queue: WriteQueueStats): void {
  const counter = (name: string, help: string, value: () => number) =>
    new Counter({
      name,
      help,
      registers: [registry],
      collect() {
        this.reset();
        this.inc(value());
      },
    });
  counter(
    'lending_api_writes_overloaded_total',
    'Writes answered 503 overloaded by the write queue: refused on arrival, or waited past WRITE_QUEUE_WAIT_MS; nothing of them ran',
    () => queue.stats.overloaded,
  );
  counter(
    'lending_api_write_queue_wait_seconds_total',
    'Time writes spent in the write queue before their transaction started (or before being answered for waiting past WRITE_QUEUE_WAIT_MS), summed',
    () => queue.stats.waitedMs / 1000,
  );
  counter('lending_api_write_queue_left_total', 'Writes that left the write queue: for their transaction, or answered for waiting too long', () => queue.stats.left);
  new Gauge({
    name: 'lending_api_write_queue',
    help: 'Writes waiting in the queue for their transaction, and write transactions in flight',
    labelNames: ['state'] as const,
    registers: [registry],
    collect() {
      this.set({ state: 'waiting' }, queue.stats.waiting);
      this.set({ state: 'in_flight' }, queue.stats.inFlight);
    },
  });
  new Gauge({
    name: 'lending_api_write_transaction_seconds',
    help: "Running average of a write transaction's duration, which the queue multiplies by the batches ahead to estimate a new write's wait",
    registers: [registry],
    aggregator: 'average',
    collect() {
      this.set(queue.stats.transactionMs / 1000);
    },
  });
}
