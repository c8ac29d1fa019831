import { collectDefaultMetrics, type Registry } from 'prom-client';

/**
 * prom-client's gauges that end in `_total`, which Prometheus reserves for
 * counters (`promtool check metrics` flags them). Nothing is lost without
 * them: each is the sum over `type` of the gauge of the same name without
 * the suffix (`sum(nodejs_active_handles)`).
 */
const GAUGES_NAMED_AS_COUNTERS = ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'];

/** prom-client's process and Node.js runtime metrics, minus the misnamed gauges. */
export function collectProcessMetrics(registry: Registry): void {
  collectDefaultMetrics({ register: registry });
  for (const name of GAUGES_NAMED_AS_COUNTERS) registry.removeSingleMetric(name);
}
