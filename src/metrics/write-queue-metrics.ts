import { Counter, Gauge, type Registry } from 'prom-client';

/** What the ledger's write queue tells about itself (LedgerWriter.stats). */
export interface WriteQueueStats {
  readonly stats: { readonly waiting: number; readonly inFlight: number; readonly overloaded: number };
}

/** The write queue's depth, its transactions in flight, and the writes it refused as overloaded. */
export function registerWriteQueueMetrics(registry: Registry, queue: WriteQueueStats): void {
  new Counter({
    name: 'lending_api_writes_overloaded_total',
    help: 'Writes refused on arrival with 503 overloaded: their queue could not reach the database within WRITE_QUEUE_WAIT_MS',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(queue.stats.overloaded);
    },
  });
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
}
