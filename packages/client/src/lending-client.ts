import { CreditLimitsClient } from './credit-limits-client.js';
import { LendingCollections } from './generated-collections.js';
import { LoansClient } from './loans-client.js';
import { Transport, type ClientOptions } from './transport.js';

export type LendingClientOptions = ClientOptions;

/**
 * Typed client for lending-api: `client.<collection>` for every collection
 * in the OpenAPI document (generated into `LendingCollections`), all sharing
 * one connection; `creditLimits` also records drawdowns and repayments, and
 * `loans` creates and repays loans.
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

  constructor(options: LendingClientOptions) {
    const transport = new Transport(options);
    super(transport);
    this.creditLimits = new CreditLimitsClient(transport);
    this.loans = new LoansClient(transport);
  }
}
