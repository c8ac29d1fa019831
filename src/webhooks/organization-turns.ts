/**
 * The organizations with deliveries to claim, taking turns (SPEC §3c
 * Isolation). A round gives each of them one turn, in the order they were
 * named; an organization named during a round (a publication, an attempt
 * of its that ended, the poll) takes its turn in that round, at its end,
 * unless it has had it already: then it waits for the next round, which
 * starts when this one ends. So with every turn bounded (a few claims), an
 * organization's fresh event waits for at most one turn of each other
 * organization, however large their backlogs: a backlog is served a turn at a
 * time, round after round, never in one go.
 */
export class OrganizationTurns {
  /** This round's organizations still to have their turn, in order. */
  private queue: string[] = [];
  private readonly waiting = new Set<string>();
  /** Those that have had their turn in this round. */
  private readonly served = new Set<string>();
  /** Named after their turn in this round: the next round's, in order. */
  private readonly nextRound = new Set<string>();

  /** `orgId` has work: its turn in this round if it has not had one, else in the next. */
  add(orgId: string): void {
    if (this.waiting.has(orgId)) return;
    if (this.served.has(orgId)) {
      this.nextRound.add(orgId);
      return;
    }
    this.waiting.add(orgId);
    this.queue.push(orgId);
  }

  /** The organization whose turn is next (starting the next round when this one is over); undefined when none has work. */
  next(): string | undefined {
    if (this.queue.length === 0) this.startRound();
    const orgId = this.queue.shift();
    if (orgId === undefined) return undefined;
    this.waiting.delete(orgId);
    this.served.add(orgId);
    return orgId;
  }

  /** Organizations waiting for a turn, in this round and the next. */
  get size(): number {
    return this.queue.length + this.nextRound.size;
  }

  private startRound(): void {
    this.served.clear();
    this.queue = [...this.nextRound];
    this.nextRound.clear();
    for (const orgId of this.queue) this.waiting.add(orgId);
  }
}
