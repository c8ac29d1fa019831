import type { Event, EventListParams, EventResendInput, EventResendResult } from './generated.js';
import { streamEvents, type EventStreamOptions, type EventStreamParams } from './event-stream.js';
import { ResourceClient, type Connection } from './resource-client.js';
import { Transport, type RequestOptions } from './transport.js';

/**
 * `/api/events/`: the organization's events (any key can read them), listed
 * like the other collections — `type` (a type or a prefix such as
 * `credit_limit.*`), `object`, `created_from`/`created_to`, `order_by` — and
 * `resend`, which delivers one event again now (a `webhooks`-scoped key).
 *
 * @example
 * // Every event after the last one handled, oldest first: none is missed, even one committed late.
 * for await (const event of client.events.listAll({ created_from: lastSeen.created_at, order_by: 'created_at' })) {
 *   if (event.id !== lastSeen.id) handle(event);
 * }
 */
export class EventsClient extends ResourceClient<Event, EventListParams> {
  readonly #transport: Transport;

  constructor(connection: Connection) {
    const transport = connection instanceof Transport ? connection : new Transport(connection);
    super(transport, 'events');
    this.#transport = transport;
  }

  /**
   * Follows the log as it grows (`GET /api/events/stream/`): every event after
   * `params.lastEventId` (or from `created_from`, or from now), oldest first,
   * none missed, one request however many events; reconnects by itself with
   * `Last-Event-ID`. Never ends on its own: stop it with `options.signal` or
   * by leaving the loop.
   *
   * @example
   * for await (const event of client.events.stream({ type: 'loan.*', lastEventId: saved })) {
   *   await handle(event);
   *   saved = event.id;
   * }
   */
  stream(params: EventStreamParams = {}, options: EventStreamOptions = {}): AsyncGenerator<Event, void, undefined> {
    return streamEvents(this.#transport, params, options);
  }

  /**
   * Delivers the event `id` again now, to every enabled endpoint that takes
   * its type, or only to `input.endpoint` (`we_…`, even one that no longer
   * takes it); answers the endpoints it goes to. An endpoint the event
   * already waits for gets no second delivery (its retry is brought forward
   * to now), so resending twice is resending once.
   */
  resend(id: string, input: EventResendInput = {}, options: RequestOptions = {}): Promise<EventResendResult> {
    const body = input.endpoint === undefined ? {} : { endpoint: input.endpoint };
    return this.#transport.postOnce<EventResendResult>(`${this.collectionPath}${encodeURIComponent(id)}/resend/`, body, options);
  }
}
