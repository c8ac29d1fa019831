import type {
  WebhookDeliveryAttempt,
  WebhookDeliveryAttemptListParams,
  WebhookEndpoint,
  WebhookEndpointInput,
  WebhookEndpointListParams,
  WebhookEndpointUpdate,
  WebhookEndpointWithSecret,
} from './generated.js';
import { ListClient, ResourceClient, type Connection } from './resource-client.js';
import { Transport, type RequestOptions, type WriteOptions } from './transport.js';

/**
 * `/api/webhook_endpoints/`: where the organization's events are delivered
 * (a `webhooks`-scoped key). `create` and `rotateSecret` answer the signing
 * secret (`whsec_…`), which is shown only then; after a rotation the old
 * secret keeps signing beside the new one for 24 h.
 *
 * @example
 * const { id, secret } = await client.webhookEndpoints.create({ url: 'https://example.com/hooks', enabled_events: ['loan.*'] });
 * for await (const attempt of client.webhookEndpoints.deliveries(id).listAll()) console.log(attempt.event, attempt.status_code);
 */
export class WebhookEndpointsClient extends ResourceClient<WebhookEndpoint, WebhookEndpointListParams> {
  readonly #transport: Transport;

  constructor(connection: Connection) {
    const transport = connection instanceof Transport ? connection : new Transport(connection);
    super(transport, 'webhook_endpoints');
    this.#transport = transport;
  }

  /** Creates an endpoint; the answer carries its `secret`, shown this once. At most 16 per organization. */
  create(input: WebhookEndpointInput, options: WriteOptions = {}): Promise<WebhookEndpointWithSecret> {
    const body = { url: input.url, enabled_events: input.enabled_events, ...(input.description === undefined ? {} : { description: input.description }) };
    return this.#transport.postJson<WebhookEndpointWithSecret>(this.collectionPath, body, options);
  }

  /** Changes `url`, `enabled_events`, `description` or `disabled` (only those given). */
  update(id: string, changes: WebhookEndpointUpdate, options: WriteOptions = {}): Promise<WebhookEndpoint> {
    const body = Object.fromEntries(Object.entries(changes).filter(([, value]) => value !== undefined));
    return this.#transport.postJson<WebhookEndpoint>(this.#endpointPath(id), body, options);
  }

  /** Removes the endpoint; its pending deliveries stop. */
  async delete(id: string, options: RequestOptions = {}): Promise<void> {
    await this.#transport.deleteJson<unknown>(this.#endpointPath(id), options);
  }

  /** A new signing secret, shown this once; the old one keeps signing beside it for 24 h. */
  rotateSecret(id: string, options: WriteOptions = {}): Promise<WebhookEndpointWithSecret> {
    return this.#transport.postJson<WebhookEndpointWithSecret>(`${this.#endpointPath(id)}rotate_secret/`, {}, options);
  }

  /** `/api/webhook_endpoints/{id}/deliveries/`: every delivery attempt to the endpoint, newest first. */
  deliveries(id: string): ListClient<WebhookDeliveryAttempt, WebhookDeliveryAttemptListParams> {
    return new ListClient(this.transport, ['webhook_endpoints', id, 'deliveries']);
  }

  #endpointPath(id: string): string {
    return `${this.collectionPath}${encodeURIComponent(id)}/`;
  }
}
