import type { FastifyBaseLogger } from 'fastify';
import { DatabaseOverloadedError } from '../store/fair-share.js';
import type { Store } from '../store/store.js';
import { organizationsWithPendingEvents, publishEvents, type Publication } from './publish-events.js';

export interface EventPublisherOptions {
  /** How often the node looks for events committed elsewhere (other nodes, the CLI, the import). */
  readonly sweepIntervalMs: number;
  /** Told after each publication that moved events (the node's deliverer starts on them at once). */
  readonly onPublished?: ((orgId: string, publication: Publication) => void) | undefined;
  readonly log: FastifyBaseLogger;
}

const READ_ONLY_TRANSACTION = '25006';

export const DEFAULT_EVENT_PUBLISHER = { sweepIntervalMs: 250 } as const;

/**
 * Moves committed events into the log (publishEvents), on every `serve`
 * node: at once for the organizations this node just wrote to (`notify`),
 * and by a sweep for everything else. Organizations take turns, one
 * publication each. A failed publication
 * (the database away, or the node overloaded) is logged once per sweep
 * interval and tried again: the outbox keeps the events meanwhile.
 */
export class EventPublisher {
  private readonly waiting = new Set<string>();
  private running: Promise<void> | undefined;
  private sweepTimer: NodeJS.Timeout | undefined;
  private stopped = false;
  private lastFailureLogAt = 0;

  constructor(
    private readonly store: Store,
    private readonly options: EventPublisherOptions,
  ) {}

  start(): void {
    this.sweepTimer = setInterval(() => void this.sweep(), this.options.sweepIntervalMs);
    this.sweepTimer.unref();
    void this.sweep();
  }

  /** The node committed a change of this organization: publish its events now. */
  notify(orgId: string): void {
    if (this.stopped) return;
    this.waiting.add(orgId);
    this.running ??= this.drain().finally(() => {
      this.running = undefined;
      // An organization named after the drain's last look at `waiting` but before this: its turn is now.
      const [late] = this.waiting;
      if (late !== undefined) this.notify(late);
    });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.sweepTimer);
    this.waiting.clear();
    await this.running;
  }

  private async sweep(): Promise<void> {
    if (this.stopped) return;
    try {
      for (const orgId of await organizationsWithPendingEvents(this.store)) this.notify(orgId);
    } catch (error) {
      this.failed(error);
    }
  }

  private async drain(): Promise<void> {
    while (this.waiting.size > 0 && !this.stopped) {
      const turn = [...this.waiting];
      this.waiting.clear();
      for (const orgId of turn) {
        if (this.stopped) return;
        try {
          const publication = await publishEvents(this.store, orgId);
          if (publication.published > 0) this.options.onPublished?.(orgId, publication);
          if (publication.more) this.waiting.add(orgId);
        } catch (error) {
          this.failed(error);
        }
      }
    }
  }

  private failed(error: unknown): void {
    // A hot standby's node serves reads only: the primary's nodes publish.
    if ((error as { code?: unknown } | undefined)?.code === READ_ONLY_TRANSACTION) return;
    const now = Date.now();
    if (now - this.lastFailureLogAt < this.options.sweepIntervalMs) return;
    this.lastFailureLogAt = now;
    // A node too busy to get a connection in time meets a database that answers: overload, never an outage.
    if (error instanceof DatabaseOverloadedError) {
      this.options.log.warn({ reason: error.message }, 'could not publish events now: this node is overloaded (the database is answering); they stay in the outbox and are tried again');
      return;
    }
    this.options.log.warn({ err: error }, 'could not publish events; they stay in the outbox and are tried again');
  }
}
