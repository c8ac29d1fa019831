import { Readable } from 'node:stream';
import { eventsAfter, type StreamedEvent, type StreamPosition, type StreamQuery } from '../events/event-stream-reader.js';
import type { EventStreamWakeups } from '../events/event-stream-wakeups.js';
import type { Queryable } from '../store/store.js';

export interface EventStreamSettings {
  /** A comment line after this long without anything sent (SPEC §3c: 15 s). */
  readonly heartbeatMs: number;
  /** How often an open stream checks that its key (or portal session) still authenticates; it ends when not. */
  readonly credentialCheckMs: number;
  /** How often a node asks the database whether an organization with open streams has published. */
  readonly pollIntervalMs: number;
  /** A reader that takes nothing for this long while the node has something to send is disconnected. */
  readonly stallTimeoutMs: number;
  /** Open streams per API key (SPEC §3c: 4); the next is a 429. */
  readonly perKey: number;
  /** Events read from the log per statement while catching up. */
  readonly batchSize: number;
  /** What the node buffers for one stream before it waits for the reader (beyond the socket's own buffers). */
  readonly bufferBytes: number;
}

export const DEFAULT_EVENT_STREAM: EventStreamSettings = {
  heartbeatMs: 15_000,
  credentialCheckMs: 15_000,
  pollIntervalMs: 50,
  stallTimeoutMs: 30_000,
  perKey: 4,
  batchSize: 500,
  bufferBytes: 64 * 1024,
};

/** How long a client's EventSource waits before it reconnects (the `retry:` field). */
const RECONNECT_MS = 1000;

export interface EventStreamSource {
  readonly db: Queryable;
  readonly orgId: string;
  readonly query: StreamQuery;
  readonly start: StreamPosition;
  readonly wakeups: EventStreamWakeups;
  readonly settings: EventStreamSettings;
  /** Called once when the stream ends, however it ends (the reader left, was cut, or the node closes). */
  readonly onEnd: () => void;
}

/**
 * One `GET /api/events/stream/` answer as a Readable the reply pipes to the
 * socket: the log read on from `start`, a batch at a time, each event as
 * one Server-Sent Event (`id`, `event`, `data`), then woken by
 * EventStreamWakeups as the organization publishes, with a comment line
 * whenever `heartbeatMs` passed in silence.
 *
 * Backpressure: the next event is read and framed only while the reader
 * takes what was sent (push returns true, or _read asks for more), so a
 * stream buffers at most `bufferBytes` and one event beyond the socket's
 * buffers. A reader that takes nothing for `stallTimeoutMs` while there is
 * more to send is cut (it reconnects with Last-Event-ID).
 */
export class EventStreamBody extends Readable {
  private readonly stop = new AbortController();
  private demanded: (() => void) | undefined;
  private lastSentAt = Date.now();
  private ended = false;
  /** The most this stream has held for its reader at once, in bytes (the backpressure bound, observed). */
  maxBuffered = 0;

  constructor(private readonly source: EventStreamSource) {
    super({ highWaterMark: source.settings.bufferBytes });
    // The start's own event id, with no data (nothing is dispatched): a client that reconnects before any event
    // arrived sends it as Last-Event-ID and resumes where this stream started, not at the end of the log then.
    const startId = source.start.eventId === undefined ? '' : `id: ${source.start.eventId}\n`;
    this.send(`retry: ${RECONNECT_MS}\n${startId}: events of the log after the start, oldest first\n\n`);
    void this.run();
  }

  /** The organization whose log this stream carries. */
  get orgId(): string {
    return this.source.orgId;
  }

  /** The node is closing: end the answer as a finished stream (clients reconnect elsewhere). */
  finish(): void {
    if (this.ended) return;
    this.stop.abort();
    this.end();
  }

  override _read(): void {
    const demanded = this.demanded;
    this.demanded = undefined;
    demanded?.();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.stop.abort();
    this.demanded?.();
    this.release();
    callback(error);
  }

  private async run(): Promise<void> {
    const { db, orgId, query, wakeups, settings } = this.source;
    let position = this.source.start;
    try {
      while (!this.stop.signal.aborted) {
        const seen = wakeups.generation(orgId);
        const batch = await eventsAfter(db, orgId, query, position, settings.batchSize);
        for (const event of batch) {
          if (this.stop.signal.aborted) return;
          position = event.position;
          if (!this.send(frameOf(event))) await this.readerTakes();
        }
        if (batch.length === settings.batchSize || this.stop.signal.aborted) continue;
        await wakeups.wait(orgId, seen, Math.max(1, settings.heartbeatMs - (Date.now() - this.lastSentAt)), this.stop.signal);
        if (!this.stop.signal.aborted && Date.now() - this.lastSentAt >= settings.heartbeatMs && !this.send(': heartbeat\n\n')) await this.readerTakes();
      }
    } catch (error) {
      // The database away (an outage, a failover): end the answer; the reader reconnects with Last-Event-ID.
      if (!this.stop.signal.aborted) this.destroy(error instanceof Error ? error : new Error(String(error)));
    }
  }

  /** Pushes a chunk; false when the buffer is full (wait for the reader before sending more). */
  private send(text: string): boolean {
    this.lastSentAt = Date.now();
    const more = this.push(text);
    if (this.readableLength > this.maxBuffered) this.maxBuffered = this.readableLength;
    return more;
  }

  /** Resolves when the reader asks for more; cuts the stream when it has not within stallTimeoutMs. */
  private readerTakes(): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.demanded = undefined;
        this.destroy(new EventStreamStalledError(this.source.settings.stallTimeoutMs));
        resolve();
      }, this.source.settings.stallTimeoutMs);
      this.demanded = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  private end(): void {
    this.ended = true;
    this.push(null);
    this.release();
  }

  private release(): void {
    if (this.releasedOnce) return;
    this.releasedOnce = true;
    this.source.onEnd();
  }

  private releasedOnce = false;
}

/** A reader that took nothing for the bound: cut, never buffered for. */
export class EventStreamStalledError extends Error {
  constructor(ms: number) {
    super(`the reader took nothing for ${ms} ms with events waiting: disconnected (reconnect with Last-Event-ID)`);
    this.name = 'EventStreamStalledError';
  }
}

/** One Server-Sent Event: the event's id, its type, and the event as GET /api/events/{id}/ renders it (one line of JSON). */
export function frameOf(event: StreamedEvent): string {
  return `id: ${event.id}\nevent: ${event.type}\ndata: ${JSON.stringify(event.event)}\n\n`;
}
