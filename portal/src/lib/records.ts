/**
 * The records the portal shows, as the API renders them: the SDK's types,
 * generated from the OpenAPI document (`npm run openapi`), so a field the API
 * adds or renames reaches the portal's type check. Type-only: nothing of the
 * SDK is bundled.
 */
import type { WebhookEndpoint as Endpoint, WebhookEndpointHealth } from '../../../packages/client/src/generated.js';

export type {
  CreditLimit,
  Entity,
  LedgerEntry,
  Loan,
  PaymentMethod,
  WebhookDeliveryAttempt as DeliveryAttempt,
  WebhookEndpointHealth as EndpointHealth,
} from '../../../packages/client/src/generated.js';

/** One UTC hour of an endpoint's attempts; `hour` is its start. */
export type HourOfAttempts = WebhookEndpointHealth['hourly_24h'][number];

/** An endpoint; `secret` only in the answer that created or rotated it. */
export type WebhookEndpoint = Endpoint & { secret?: string };

/** An event of the log, as far as the portal reads into it (its record's uid, or a ledger entry's id). */
export interface LogEvent {
  id: string;
  type: string;
  created_at: string;
  data: { object: { uid?: string; id?: string } & Record<string, unknown> };
}
