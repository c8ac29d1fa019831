import { Counter, Gauge, type Registry } from 'prom-client';

/** What the node's FairShare tells about itself. */
export interface DatabaseShareStats {
  readonly stats: { readonly running: number; readonly waiting: number };
  readonly refused: number;
}

/** Queries admitted to the database and waiting for their organization's turn, and those refused as overloaded. */
export function registerDatabaseShareMetrics(registry: Registry, share: DatabaseShareStats): void {
  new Counter({
    name: 'lending_api_db_overloaded_total',
    help: "Requests refused with 503 overloaded by the database share: their organization's queue was full (DATABASE_QUEUE_PER_ORG), or their database time ran out while the database answered others",
    registers: [registry],
    collect() {
      this.reset();
      this.inc(share.refused);
    },
  });
  new Gauge({
    name: 'lending_api_db_share_queries',
    help: "Requests' database queries running, and waiting for their organization's turn",
    labelNames: ['state'] as const,
    registers: [registry],
    collect() {
      const { running, waiting } = share.stats;
      this.set({ state: 'running' }, running);
      this.set({ state: 'waiting' }, waiting);
    },
  });
}
