import type { LedgerEntryInput, Loan, LoanCreated, LoanInput, LoanListParams, LoanRepaymentResult } from './generated.js';
import { ResourceClient, type Connection } from './resource-client.js';
import { Transport, type WriteOptions } from './transport.js';

/**
 * `/api/loans/`: `list`, `retrieve` and `listAll` of loans, and the two writes
 * (a write-scoped key): `create` lends on a credit limit, `repay` repays a loan.
 * Each write carries an Idempotency-Key — yours, or one generated per call —
 * and every retry of that call sends the same key, so it happens once.
 *
 * @example
 * const { loan, limit } = await client.loans.create({ credit_limit: 'cl_demo_01_usd', payment_method: 'pm_demo_001', principal: '500.00' }, { idempotencyKey: 'loan-17' });
 * await client.loans.repay(loan.uid, { amount: '100.00' }, { idempotencyKey: 'loan-17-rp-1' });
 */
export class LoansClient extends ResourceClient<Loan, LoanListParams> {
  readonly #transport: Transport;

  constructor(connection: Connection) {
    const transport = connection instanceof Transport ? connection : new Transport(connection);
    super(transport, 'loans');
    this.#transport = transport;
  }

  /**
   * Creates a loan and draws its principal on the credit limit, in one
   * transaction; resolves with the loan and the limit after it. A principal
   * above the balance throws a 409 `insufficient_balance`; a method of another
   * entity or currency a 422; a limit or method not yours a 404. Nothing is
   * written in any of these cases.
   */
  create(input: LoanInput, options: WriteOptions = {}): Promise<LoanCreated> {
    const body = {
      credit_limit: input.credit_limit,
      payment_method: input.payment_method,
      principal: input.principal,
      ...(input.reference === undefined ? {} : { reference: input.reference }),
    };
    return this.#transport.postJson<LoanCreated>('/api/loans/', body, options);
  }

  /**
   * Repays part or all of a loan: its outstanding and its limit's fall
   * together; the repayment to zero makes it `repaid`. More than the
   * outstanding amount throws a 409 `repayment_exceeds_outstanding`.
   */
  repay(uid: string, input: LedgerEntryInput, options: WriteOptions = {}): Promise<LoanRepaymentResult> {
    const body = { amount: input.amount, ...(input.at === undefined ? {} : { at: input.at }), ...(input.reference === undefined ? {} : { reference: input.reference }) };
    return this.#transport.postJson<LoanRepaymentResult>(`/api/loans/${encodeURIComponent(uid)}/repayments/`, body, options);
  }
}
