import { Gauge, type Registry } from 'prom-client';

/**
 * `lending_api_redis_breaker_open`: 1 while this process counts rate limits
 * in its own memory because Redis failed or timed out, 0 while they are
 * shared through Redis. Summed over workers in a cluster: the number of
 * processes whose breaker is open.
 */
export function registerRedisBreakerGauge(registry: Registry, breaker: { readonly isOpen: boolean }): void {
  new Gauge({
    name: 'lending_api_redis_breaker_open',
    help: "1 while rate limits are counted in this process's memory because Redis failed or timed out; 0 while shared through Redis",
    registers: [registry],
    collect() {
      this.set(breaker.isOpen ? 1 : 0);
    },
  });
}
