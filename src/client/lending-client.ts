import type { CreditLimit, CreditLimitListParams, PaymentMethod, PaymentMethodListParams } from './generated.js';
import { ResourceClient } from './resource-client.js';
import type { RetryOptions } from './retry-policy.js';
import { Transport, type FetchFunction } from './transport.js';

export interface LendingClientOptions {
  /** Where lending-api is served, e.g. `https://lending.example.com` (no `/api`). */
  readonly baseUrl: string;
  /** Your organization ID: the Basic user name. */
  readonly organizationId: string;
  /** An API key of that organization: the Basic password. */
  readonly apiKey: string;
  /** A `fetch` to use instead of the global one (a proxy agent, a test double, an app's in-process router). */
  readonly fetch?: FetchFunction;
  /** Retries of 429 and 503 answers; Retry-After is honoured. */
  readonly retry?: RetryOptions;
  /** Waits between retries (default: a timer). */
  readonly sleep?: (ms: number) => Promise<void>;
}

/**
 * Typed client for lending-api.
 *
 * @example
 * const client = new LendingClient({ baseUrl: 'http://127.0.0.1:3000', organizationId: 'org_demo', apiKey: process.env.LENDING_API_KEY! });
 * const page = await client.paymentMethods.list({ entity: 'ent_demo_03', currency: 'USD' });
 * const limit = await client.creditLimits.retrieve('cl_demo_03_usd');
 */
export class LendingClient {
  readonly paymentMethods: ResourceClient<PaymentMethod, PaymentMethodListParams>;
  readonly creditLimits: ResourceClient<CreditLimit, CreditLimitListParams>;

  constructor(options: LendingClientOptions) {
    const transport = new Transport(options);
    this.paymentMethods = new ResourceClient(transport, 'methods');
    this.creditLimits = new ResourceClient(transport, 'limits');
  }
}
