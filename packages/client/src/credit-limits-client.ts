import { CreditLimitCollection } from './generated-collections.js';
import type { LedgerEntryInput, LedgerWriteResult } from './generated.js';
import type { Connection } from './resource-client.js';
import { Transport, type WriteOptions } from './transport.js';

/**
 * `/api/limits/`: `list`, `retrieve`, `listAll` and `entries(uid)` of credit limits, and the
 * two writes that move them, `draw` and `repay` (a write-scoped key). Each
 * write carries an Idempotency-Key — yours, or one generated per call — and
 * every retry of that call sends the same key, so it is recorded once.
 *
 * @example
 * const { entry, limit } = await client.creditLimits.draw('cl_demo_03_usd', { amount: '5000.00', reference: 'loan-17' }, { idempotencyKey: 'loan-17' });
 * console.log(entry.id, limit.balance);
 */
export class CreditLimitsClient extends CreditLimitCollection {
  readonly #transport: Transport;

  constructor(connection: Connection) {
    const transport = connection instanceof Transport ? connection : new Transport(connection);
    super(transport, 'limits');
    this.#transport = transport;
  }

  /**
   * Records a drawdown: `outstanding` rises and `balance` falls by `amount`.
   * More than the balance throws a 409 `insufficient_balance` and records nothing.
   */
  draw(uid: string, input: LedgerEntryInput, options: WriteOptions = {}): Promise<LedgerWriteResult> {
    return this.#record(uid, 'drawdowns', input, options);
  }

  /**
   * Records a repayment: `outstanding` falls and `balance` rises by `amount`.
   * More than the outstanding amount throws a 409 `repayment_exceeds_outstanding`.
   */
  repay(uid: string, input: LedgerEntryInput, options: WriteOptions = {}): Promise<LedgerWriteResult> {
    return this.#record(uid, 'repayments', input, options);
  }

  #record(uid: string, kind: 'drawdowns' | 'repayments', input: LedgerEntryInput, options: WriteOptions): Promise<LedgerWriteResult> {
    const body = { amount: input.amount, ...(input.at === undefined ? {} : { at: input.at }), ...(input.reference === undefined ? {} : { reference: input.reference }) };
    return this.#transport.postJson<LedgerWriteResult>(`/api/limits/${encodeURIComponent(uid)}/${kind}/`, body, options);
  }
}
