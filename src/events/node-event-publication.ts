import type { FastifyBaseLogger } from 'fastify';
import type { Store } from '../store/store.js';
import { DEFAULT_EVENT_PUBLISHER, EventPublisher } from './event-publisher.js';
import { EventStreamWakeups } from './event-stream-wakeups.js';
import { PublicationNotices } from './publication-notices.js';

export interface NodeEventPublicationOptions {
  readonly log: FastifyBaseLogger;
  /** How often the node's open event streams ask the database whether their organizations published. */
  readonly streamPollIntervalMs: number;
  /** Told after each publication of this node that moved events, after its streams were woken (the deliverer). */
  readonly onPublished?: ((orgId: string) => void) | undefined;
  /**
   * An API-only node (`serve --deliver off`) on PostgreSQL: each publication is also a NOTIFY that wakes the
   * delivery workers (`lending-api deliver`, PublicationListener) rather than leaving them to their poll.
   */
  readonly noticeToWorkers?: boolean | undefined;
}

export interface NodeEventPublication {
  readonly publisher: EventPublisher;
  /** The app's event streams wait on these (AppOptions.eventStreamWakeups). */
  readonly streamWakeups: EventStreamWakeups;
}

/**
 * The process's event publisher and the wakeups of its event streams, built
 * once by `serve` (server.ts): a publication of this node wakes this node's
 * streams at once, without waiting for their next poll of the database
 * (which is how publications of other nodes, the CLI and imports reach them).
 */
export function nodeEventPublication(store: Store, options: NodeEventPublicationOptions): NodeEventPublication {
  const streamWakeups = new EventStreamWakeups(store, { pollIntervalMs: options.streamPollIntervalMs });
  const notices = options.noticeToWorkers && store.kind === 'postgres' ? new PublicationNotices(store) : undefined;
  const publisher = new EventPublisher(store, {
    ...DEFAULT_EVENT_PUBLISHER,
    log: options.log,
    onPublished: (orgId) => {
      streamWakeups.published(orgId);
      options.onPublished?.(orgId);
      notices?.published(orgId);
    },
  });
  return { publisher, streamWakeups };
}
