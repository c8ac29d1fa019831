import type {
  WebhookDeliveryAttempt,
  WebhookDeliveryAttemptListParams,
  WebhookEndpoint,
  WebhookEndpointInput,
  WebhookEndpointListParams,
  WebhookEndpointReplay,
  WebhookEndpointReplayInput,
  WebhookEndpointTest,
  WebhookEndpointUpdate,
  WebhookEndpointWithSecret,
} from './generated.js';
import { NumberedListClient } from './numbered-list-client.js';
import { ResourceClient, type Connection, type QueryValue } from './resource-client.js';
import { Transport, type RequestOptions } from './transport.js';

/**
 * `/api/webhook_endpoints/`: where the organization's events are delivered
 * (a `webhooks`-scoped key). `create` and `rotateSecret` answer the signing
 * secret (`whsec_…`), which is shown only then; after a rotation the old
 * secret keeps signing beside the new one for 24 h. The server keeps no
 * Idempotency-Key for these requests, so one that got no answer (or a 504
 * `outcome_unknown`) is not sent again: list or retrieve to see whether it
 * was done. Lists are numbered pages (at most 16 endpoints). Every endpoint
 * carries its `health` (pending deliveries, last attempt and success,
 * `failing_since`, the last 24 hours' attempts by outcome).
 *
 * @example
 * const { id, secret } = await client.webhookEndpoints.create({ url: 'https://example.com/hooks', enabled_events: ['loan.*'] });
 * for await (const attempt of client.webhookEndpoints.deliveries(id).listAll()) console.log(attempt.event, attempt.status_code);
 * const { ok, status_code } = await client.webhookEndpoints.test(id);
 * const { count } = await client.webhookEndpoints.replay(id, { since: '2026-11-28T00:00:00Z' });
 */
export class WebhookEndpointsClient extends ResourceClient<WebhookEndpoint, WebhookEndpointListParams> {
  readonly #transport: Transport;

  constructor(connection: Connection) {
    const transport = connection instanceof Transport ? connection : new Transport(connection);
    super(transport, 'webhook_endpoints');
    this.#transport = transport;
  }

  /** Creates an endpoint; the answer carries its `secret`, shown this once. At most 16 per organization. */
  create(input: WebhookEndpointInput, options: RequestOptions = {}): Promise<WebhookEndpointWithSecret> {
    const body = { url: input.url, enabled_events: input.enabled_events, ...(input.description === undefined ? {} : { description: input.description }) };
    return this.#transport.postOnce<WebhookEndpointWithSecret>(this.collectionPath, body, options);
  }

  /** Changes `url`, `enabled_events`, `description` or `disabled` (only those given). */
  update(id: string, changes: WebhookEndpointUpdate, options: RequestOptions = {}): Promise<WebhookEndpoint> {
    const body = Object.fromEntries(Object.entries(changes).filter(([, value]) => value !== undefined));
    return this.#transport.postOnce<WebhookEndpoint>(this.#endpointPath(id), body, options);
  }

  /** Removes the endpoint; its pending deliveries stop. */
  async delete(id: string, options: RequestOptions = {}): Promise<void> {
    await this.#transport.deleteJson<unknown>(this.#endpointPath(id), options);
  }

  /** A new signing secret, shown this once; the old one keeps signing beside it for 24 h. */
  rotateSecret(id: string, options: RequestOptions = {}): Promise<WebhookEndpointWithSecret> {
    return this.#transport.postOnce<WebhookEndpointWithSecret>(`${this.#endpointPath(id)}rotate_secret/`, {}, options);
  }

  /**
   * Sends again, now, every event whose last attempt to the endpoint in
   * `since`…`until` (inclusive; `until` defaults to now) failed, once each:
   * the answer's `count` says how many. Events already waiting for the
   * endpoint (a retry is scheduled) are not queued twice, so a second replay
   * adds nothing. A disabled endpoint is a 422: enable it first.
   */
  replay(id: string, window: WebhookEndpointReplayInput, options: RequestOptions = {}): Promise<WebhookEndpointReplay> {
    const body = { since: window.since, ...(window.until === undefined ? {} : { until: window.until }) };
    return this.#transport.postOnce<WebhookEndpointReplay>(`${this.#endpointPath(id)}replay/`, body, options);
  }

  /**
   * Sends the endpoint a signed `webhook_endpoint.test` delivery now and
   * resolves with what its receiver answered (`ok`, `status_code`, `error`,
   * `response_body`; within 10 s). Not an event of the log, and not recorded.
   */
  test(id: string, options: RequestOptions = {}): Promise<WebhookEndpointTest> {
    return this.#transport.postOnce<WebhookEndpointTest>(`${this.#endpointPath(id)}test/`, {}, options);
  }

  /** `/api/webhook_endpoints/{id}/deliveries/`: every delivery attempt to the endpoint, newest first. */
  deliveries(id: string): NumberedListClient<WebhookDeliveryAttempt, WebhookDeliveryAttemptListParams> {
    return new NumberedListClient(this.transport, ['webhook_endpoints', id, 'deliveries']);
  }

  /** `listAll` walks the numbered pages: endpoints are not listed with cursors. */
  protected override walkStart(filters: { [name: string]: QueryValue }): { [name: string]: QueryValue } {
    return filters;
  }

  #endpointPath(id: string): string {
    return `${this.collectionPath}${encodeURIComponent(id)}/`;
  }
}
