import { CreditLimitsClient } from './credit-limits-client.js';
import { EventsClient } from './events-client.js';
import { LendingCollections } from './generated-collections.js';
import { LoansClient } from './loans-client.js';
import { PortalSessionsClient } from './portal-sessions-client.js';
import { Transport, type ClientOptions } from './transport.js';
import { WebhookEndpointsClient } from './webhook-endpoints-client.js';

export type LendingClientOptions = ClientOptions;

/**
 * Typed client for lending-api: `client.<collection>` for every collection
 * in the OpenAPI document (generated into `LendingCollections`), all sharing
 * one connection; `creditLimits` also records drawdowns and repayments,
 * `loans` creates and repays loans, `events` lists the event log and resends,
 * `webhookEndpoints` manages where events are delivered, and `portalSessions`
 * makes one-time links into the organization's portal.
 *
 * @example
 * const client = new LendingClient({ baseUrl: 'http://127.0.0.1:3000', organizationId: 'org_demo', apiKey: process.env.LENDING_API_KEY! });
 * const page = await client.paymentMethods.list({ entity: 'ent_demo_03', currency: 'USD' });
 * const limit = await client.creditLimits.retrieve('cl_demo_03_usd', { timeoutMs: 5000 });
 * const { loan, limit: after } = await client.loans.create({ credit_limit: 'cl_demo_03_usd', payment_method: 'pm_demo_009', principal: '5000.00' }, { idempotencyKey: 'loan-17' });
 */
export class LendingClient extends LendingCollections {
  declare readonly creditLimits: CreditLimitsClient;
  declare readonly loans: LoansClient;
  declare readonly events: EventsClient;
  declare readonly webhookEndpoints: WebhookEndpointsClient;
  declare readonly portalSessions: PortalSessionsClient;

  constructor(options: LendingClientOptions) {
    const transport = new Transport(options);
    super(transport);
    this.creditLimits = new CreditLimitsClient(transport);
    this.loans = new LoansClient(transport);
    this.events = new EventsClient(transport);
    this.webhookEndpoints = new WebhookEndpointsClient(transport);
    this.portalSessions = new PortalSessionsClient(transport);
  }
}
