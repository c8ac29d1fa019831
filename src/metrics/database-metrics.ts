import { Gauge, type Registry } from 'prom-client';
import type { NodeRoleState } from '../store/node-role.js';

/** A gauge whose sample is left out while its value is unknown (NaN): never a made-up 0. */
class GaugeWhileKnown<T extends string> extends Gauge<T> {
  override async get(): ReturnType<Gauge<T>['get']> {
    const metric = await super.get();
    return { ...metric, values: metric.values.filter((sample) => !Number.isNaN(sample.value)) };
  }
}

/** The longest a scrape waits for the database's answer: a frozen database is unreachable, not a scrape that times out. */
const PROBE_WAIT_MS = 2000;

/**
 * The database this node reads, as the node sees it (the same probe as
 * `/readyz`, at most once a second): whether it answers, whether it is a
 * standby, and how far it lags behind the WAL it received. On a primary the
 * lag is 0; while the database is unreachable the role and lag are absent
 * (`lending_api_database_reachable` says why).
 */
export function registerDatabaseMetrics(registry: Registry, role: { current(): Promise<NodeRoleState> }): void {
  const known = () => withinProbeWait(role.current().catch(() => undefined));
  new Gauge({
    name: 'lending_api_database_reachable',
    help: "1 while this node's database answers its role probe (within 2 s), 0 while it is unreachable, refuses or does not answer",
    registers: [registry],
    // With --workers N: 1 only while every worker reaches it.
    aggregator: 'min',
    async collect() {
      this.set((await known()) ? 1 : 0);
    },
  });
  new GaugeWhileKnown({
    name: 'lending_api_database_in_recovery',
    help: "1 while this node's database is a hot standby, 0 on a primary; absent while the database is unreachable",
    registers: [registry],
    aggregator: 'max',
    async collect() {
      const state = await known();
      this.set(state ? Number(state.role === 'replica') : Number.NaN);
    },
  });
  new GaugeWhileKnown({
    name: 'lending_api_replica_lag_seconds',
    help: 'On a standby: age of the last applied transaction while received WAL waits to be applied (0 when caught up, and on a primary)',
    registers: [registry],
    aggregator: 'max',
    async collect() {
      const state = await known();
      this.set(state ? (state.lag_seconds ?? 0) : Number.NaN);
    },
  });
  new GaugeWhileKnown({
    name: 'lending_api_replica_lag_bytes',
    help: 'On a standby: WAL received but not yet applied, in bytes (0 on a primary)',
    registers: [registry],
    aggregator: 'max',
    async collect() {
      const state = await known();
      this.set(state ? (state.lag_bytes ?? 0) : Number.NaN);
    },
  });
}

function withinProbeWait<T>(probe: Promise<T | undefined>): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), PROBE_WAIT_MS)));
  return Promise.race([probe, timeout]).finally(() => clearTimeout(timer));
}
