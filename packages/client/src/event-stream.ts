import type { Event } from './generated.js';
import { LendingApiError } from './lending-api-error.js';
import type { Transport } from './transport.js';

/** What `client.events.stream()` follows: the log's filters and where to start. */
export interface EventStreamParams {
  /** An event type, or a prefix such as `credit_limit.*`. */
  readonly type?: string | undefined;
  /** The uid of the record the events are about. */
  readonly object?: string | undefined;
  /** Start at this time (inclusive); without it and `lastEventId`, at the end of the log (new events only). */
  readonly created_from?: string | undefined;
  /** Start after this event (the last one your program handled): wins over `created_from`. */
  readonly lastEventId?: string | undefined;
}

export interface EventStreamOptions {
  /** Ends the iteration (it returns; no error is thrown). */
  readonly signal?: AbortSignal | undefined;
  /** The longest wait before a reconnect after a failure (it doubles from 1 s up to this). Default 30 s. */
  readonly maxReconnectDelayMs?: number | undefined;
  /** Told before each reconnect's wait, with what ended the connection. */
  readonly onReconnect?: ((event: { readonly delayMs: number; readonly error: unknown; readonly lastEventId: string | undefined }) => void) | undefined;
}

const FIRST_RECONNECT_DELAY_MS = 1000;
const DEFAULT_MAX_RECONNECT_DELAY_MS = 30_000;

/**
 * The organization's events from `GET /api/events/stream/`, oldest first, as
 * they enter the log: an async iterator that never ends on its own. When the
 * connection ends (the network, a node restarting, the server cutting a
 * reader that fell behind) it reconnects with `Last-Event-ID`, so no event is
 * missed or repeated; a 429 (a key's fifth stream, or its rate budget) or a
 * 5xx is waited out; any other error answer is thrown.
 */
export async function* streamEvents(transport: Transport, params: EventStreamParams, options: EventStreamOptions): AsyncGenerator<Event, void, undefined> {
  const { signal } = options;
  const search = new URLSearchParams();
  for (const name of ['type', 'object', 'created_from'] as const) {
    const value = params[name];
    if (value !== undefined) search.set(name, value);
  }
  const query = search.toString();
  const path = `/api/events/stream/${query === '' ? '' : `?${query}`}`;
  let lastEventId = params.lastEventId;
  let failures = 0;
  while (!signal?.aborted) {
    const controller = new AbortController();
    const abort = () => controller.abort(signal?.reason);
    signal?.addEventListener('abort', abort, { once: true });
    let ended: unknown;
    try {
      const response = await transport.openStream(path, lastEventId === undefined ? {} : { 'last-event-id': lastEventId }, controller.signal);
      for await (const frame of framesOf(response, controller.signal)) {
        if (frame.id !== undefined) lastEventId = frame.id;
        if (frame.data === undefined) continue;
        failures = 0;
        yield JSON.parse(frame.data) as Event;
      }
      ended = new Error('the stream ended');
    } catch (error) {
      if (signal?.aborted) return;
      if (error instanceof LendingApiError && error.status !== 429 && error.status < 500) throw error;
      ended = error;
    } finally {
      signal?.removeEventListener('abort', abort);
      controller.abort();
    }
    failures += 1;
    const retryAfter = ended instanceof LendingApiError && ended.retryAfterSeconds !== undefined ? ended.retryAfterSeconds * 1000 : 0;
    const delayMs = Math.max(retryAfter, Math.min(options.maxReconnectDelayMs ?? DEFAULT_MAX_RECONNECT_DELAY_MS, FIRST_RECONNECT_DELAY_MS * 2 ** (failures - 1)));
    options.onReconnect?.({ delayMs, error: ended, lastEventId });
    try {
      await transport.wait(delayMs, signal);
    } catch {
      return;
    }
  }
}

interface Frame {
  readonly id: string | undefined;
  /** undefined: nothing to dispatch (a comment, or an `id` alone). */
  readonly data: string | undefined;
}

/** The Server-Sent Events of a response body (WHATWG parsing: `id`, `data`; `event` and `retry` are not needed here). */
async function* framesOf(response: Response, signal: AbortSignal): AsyncGenerator<Frame, void, undefined> {
  if (!response.body) return;
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  try {
    for (;;) {
      const chunk = await reader.read();
      if (chunk.done) return;
      buffer += decoder.decode(chunk.value, { stream: true }).replace(/\r\n?/g, '\n');
      let end: number;
      while ((end = buffer.indexOf('\n\n')) !== -1) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        let id: string | undefined;
        const data: string[] = [];
        for (const line of block.split('\n')) {
          const colon = line.indexOf(':');
          if (colon === 0) continue;
          const field = colon === -1 ? line : line.slice(0, colon);
          const value = colon === -1 ? '' : line.slice(colon + 1).replace(/^ /, '');
          if (field === 'id') id = value;
          else if (field === 'data') data.push(value);
        }
        yield { id, data: data.length === 0 ? undefined : data.join('\n') };
      }
      if (signal.aborted) return;
    }
  } finally {
    reader.releaseLock();
  }
}
