import type { Queryable } from '../store/store.js';

export interface EventStreamWakeupsOptions {
  /** How often the node asks the database whether an organization with open streams has published (EVENT_STREAM_POLL_MS). */
  readonly pollIntervalMs: number;
}

/** The most organizations one poll statement asks about (its id array stays a modest parameter). */
const POLL_CHUNK = 1000;

interface Followed {
  streams: number;
  /** Moves on each time the organization's published_through is seen to move (or this node publishes). */
  generation: number;
  publishedThrough: string | undefined;
  /** Whether a poll has read the organization's row (or its absence) yet. */
  looked: boolean;
  readonly waiters: Set<() => void>;
}

/**
 * Wakes the node's open event streams when their organization publishes,
 * whichever node (or CLI, or import) published: every `pollIntervalMs` it
 * reads the followed organizations' `event_streams.published_through` in
 * one statement (`org_id = ANY(...)`, a chunk of at most 1,000 ids each; an
 * index scan of the primary key), and wakes an organization's streams when
 * its row moved. Polling, not LISTEN/NOTIFY, so it
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
      entry = { streams: 0, generation: 0, publishedThrough: undefined, looked: false, waiters: new Set() };
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
      const orgIds = [...this.followed.keys()];
      for (let start = 0; start < orgIds.length && !this.closed; start += POLL_CHUNK) {
        const chunk = orgIds.slice(start, start + POLL_CHUNK);
        let rows: { org_id: string; through: string }[];
        try {
          rows = await this.db.query<{ org_id: string; through: string }>(
            'SELECT org_id::text AS org_id, published_through::text AS through FROM event_streams WHERE org_id = ANY($1::bigint[])',
            [chunk],
            { prepare: true },
          );
        } catch {
          // The database away (a failover, an outage): the streams keep their positions; the next poll tries again.
          continue;
        }
        if (this.closed) return;
        const throughOf = new Map(rows.map((row) => [row.org_id, row.through]));
        for (const orgId of chunk) {
          // Released while the statement ran: nothing left to wake.
          const entry = this.followed.get(orgId);
          if (!entry) continue;
          const through = throughOf.get(orgId);
          // The first look wakes too (a read that finds nothing): a publication between a stream's read and it is not lost.
          if (!entry.looked || through !== entry.publishedThrough) {
            entry.looked = true;
            entry.publishedThrough = through;
            this.wake(entry);
          }
        }
      }
    } finally {
      this.polling = false;
      this.schedule();
    }
  }
}
