import type { Queryable } from '../store/store.js';

export interface EventStreamWakeupsOptions {
  /** How often the node asks the database whether an organization with open streams has published (EVENT_STREAM_POLL_MS). */
  readonly pollIntervalMs: number;
}

interface Followed {
  streams: number;
  /** Moves on each time the organization's published_through is seen to move (or this node publishes). */
  generation: number;
  publishedThrough: string | undefined;
  readonly waiters: Set<() => void>;
}

/**
 * Wakes the node's open event streams when their organization publishes,
 * whichever node (or CLI, or import) published: every `pollIntervalMs` it
 * reads each followed organization's `event_streams.published_through`
 * (one primary-key lookup, a router statement on Citus), and wakes that
 * organization's streams when it moved. Polling, not LISTEN/NOTIFY, so it
 * works the same on PGlite, PostgreSQL, behind PgBouncer in transaction
 * mode (where LISTEN does not pass) and across a Patroni failover (the next
 * poll reaches the new primary). Only organizations with an open stream on
 * this node are polled, and only while one is open.
 */
export class EventStreamWakeups {
  private readonly followed = new Map<string, Followed>();
  private timer: NodeJS.Timeout | undefined;
  private polling = false;
  private closed = false;

  constructor(
    private readonly db: Queryable,
    private readonly options: EventStreamWakeupsOptions,
  ) {}

  /** A stream of `orgId` opened: follow the organization until the returned release is called. */
  follow(orgId: string): () => void {
    let entry = this.followed.get(orgId);
    if (!entry) {
      entry = { streams: 0, generation: 0, publishedThrough: undefined, waiters: new Set() };
      this.followed.set(orgId, entry);
    }
    entry.streams += 1;
    this.schedule();
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const current = this.followed.get(orgId);
      if (current && --current.streams === 0) this.followed.delete(orgId);
    };
  }

  /** What a stream compares after its read: a change means something may have been published since. */
  generation(orgId: string): number {
    return this.followed.get(orgId)?.generation ?? 0;
  }

  /** Resolves when the organization's generation moves past `seen`, or after `ms`, or when `signal` aborts. */
  wait(orgId: string, seen: number, ms: number, signal: AbortSignal): Promise<void> {
    const entry = this.followed.get(orgId);
    if (!entry || entry.generation !== seen || signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        entry.waiters.delete(done);
        signal.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      entry.waiters.add(done);
      signal.addEventListener('abort', done, { once: true });
    });
  }

  /** This node published events of `orgId`: wake its streams now rather than at the next poll. */
  published(orgId: string): void {
    const entry = this.followed.get(orgId);
    if (entry) this.wake(entry);
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
    for (const entry of this.followed.values()) this.wake(entry);
  }

  private wake(entry: Followed): void {
    entry.generation += 1;
    for (const waiter of [...entry.waiters]) waiter();
  }

  private schedule(): void {
    if (this.timer !== undefined || this.polling || this.closed || this.followed.size === 0) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.poll();
    }, this.options.pollIntervalMs);
    this.timer.unref();
  }

  private async poll(): Promise<void> {
    this.polling = true;
    try {
      for (const [orgId, entry] of [...this.followed]) {
        if (this.closed) return;
        let through: string | undefined;
        try {
          const [row] = await this.db.query<{ through: string }>('SELECT published_through::text AS through FROM event_streams WHERE org_id = $1', [orgId], { prepare: true });
          through = row?.through;
        } catch {
          // The database away (a failover, an outage): the streams keep their positions; the next poll tries again.
          continue;
        }
        // The first look wakes too (a read that finds nothing): a publication between a stream's read and it is not lost.
        if (through !== entry.publishedThrough) {
          entry.publishedThrough = through;
          this.wake(entry);
        }
      }
    } finally {
      this.polling = false;
      this.schedule();
    }
  }
}
