/**
 * Whose turn it is among tenants (organizations) waiting for a transaction
 * slot: the tenant with the fewest transactions in flight and, among those,
 * the one that started one least recently. One tenant's flood of writes then
 * makes another's wait for one slot, not for the flood's queue.
 */
export class TenantTurns {
  private readonly inFlight = new Map<string, number>();
  /** When each tenant last started a transaction (a sequence number), oldest first. */
  private readonly lastStarted = new Map<string, number>();
  private starts = 0;

  /** Whether the tenant has a transaction in flight. */
  busy(tenant: string): boolean {
    return this.inFlight.has(tenant);
  }

  started(tenant: string): void {
    this.inFlight.set(tenant, (this.inFlight.get(tenant) ?? 0) + 1);
    this.lastStarted.delete(tenant);
    this.lastStarted.set(tenant, (this.starts += 1));
    // Tenants not seen for long are forgotten (they rank as never started, which is what they are now).
    if (this.lastStarted.size > 10_000) this.lastStarted.delete(this.lastStarted.keys().next().value as string);
  }

  finished(tenant: string): void {
    const left = (this.inFlight.get(tenant) ?? 1) - 1;
    if (left > 0) this.inFlight.set(tenant, left);
    else this.inFlight.delete(tenant);
  }

  /** The index of the first item of the tenant whose turn it is; 0 when `items` is empty. */
  next<I>(items: readonly I[], tenantOf: (item: I) => string): number {
    let best = 0;
    let bestInFlight = Number.POSITIVE_INFINITY;
    let bestStarted = Number.POSITIVE_INFINITY;
    const seen = new Set<string>();
    for (const [i, item] of items.entries()) {
      const tenant = tenantOf(item);
      if (seen.has(tenant)) continue;
      seen.add(tenant);
      const inFlight = this.inFlight.get(tenant) ?? 0;
      const started = this.lastStarted.get(tenant) ?? -1;
      if (inFlight < bestInFlight || (inFlight === bestInFlight && started < bestStarted)) {
        best = i;
        bestInFlight = inFlight;
        bestStarted = started;
      }
    }
    return best;
  }
}
