import { expect, it } from 'vitest';
import { LedgerWriter, type LedgerWriteRequest, type WriteAnswer } from '../../src/ledger/index.js';
import { loanCreation, type LoanResult } from '../../src/ledger/loan-operations.js';
import { creditLimits } from '../../src/resources/credit-limits.js';
import { loans } from '../../src/resources/loans.js';
import { recordPgMessages } from '../helpers/pg-messages.js';
import { insertPaymentMethods, paymentMethod } from '../helpers/records.js';
import { describeEachStore } from '../helpers/stores.js';
import { ledgerState, useWriter } from '../helpers/writes.js';

// Loans on distinct limits that arrive together go in ONE transaction, sent to PostgreSQL as one message:
// the claim of their keys, the lock of their limits in uid order, every record's cause, and one statement
// that writes every loan (src/ledger/joined-loans.ts). A loan it did not make runs again the long way, which
// tells why: a 409 stored and replayed, a 404 stored nowhere.
describeEachStore('loans that arrive together', (store, kind) => {
  const { writer, newLimit } = useWriter(store);
  const folds = kind === 'postgres' && process.env.DATABASE_PREPARED_STATEMENTS !== 'false' && process.env.TEST_DISTRIBUTE_ON_CITUS !== '1';
  const messages = recordPgMessages();
  const views = { loans, limits: creditLimits };

  /** A writer with one transaction slot on a store that counts its transactions. */
  const oneSlotWriter = () => {
    const counter = { transactions: 0 };
    const inner = store();
    const counted = { ...inner, transaction: ((fn, options) => ((counter.transactions += 1), inner.transaction(fn, options))) as typeof inner.transaction };
    return { writes: new LedgerWriter(counted, { idempotencyTtlHours: 24, queue: { concurrency: 1 } }), counter };
  };
  const request = (limit: string, principal: string, key: string): LedgerWriteRequest<LoanResult> => ({
    operation: loanCreation(views, { orgId: writer().org.id, keyId: writer().keyId, creditLimit: limit, paymentMethod: 'pm_together', principal }),
    idempotency: { key, keyId: writer().keyId },
    requestId: `req-${key}`,
  });
  const outcomeOf = (answer: PromiseSettledResult<WriteAnswer>) =>
    answer.status === 'fulfilled' ? { status: answer.value.status, replayed: answer.value.replayed } : { error: (answer.reason as { code?: string }).code };

  it('writes every loan of the batch in one transaction and one message; a 409 and a 404 then go the long way', async () => {
    await insertPaymentMethods(store(), writer().org.id, [paymentMethod({ uid: 'pm_together', entity: 'ent_1', currency: 'USD' })]);
    const [a, b, c, full, warm] = [await newLimit('100.00'), await newLimit('100.00'), await newLimit('100.00'), await newLimit('10.00', '10.00'), await newLimit('100.00')];
    const { writes, counter } = oneSlotWriter();
    // A joined batch first: its connection prepares the joined statements (before that, they go one by one).
    await Promise.all([writes.write(request(a, '1.00', 'loans-warm-a')), writes.write(request(warm, '1.00', 'loans-warm'))]);
    messages.reset();
    counter.transactions = 0;
    const answers = await Promise.allSettled([
      writes.write(request(c, '4.00', 'loans-c')),
      writes.write(request(a, '2.00', 'loans-a')),
      writes.write(request(full, '1.00', 'loans-full')),
      writes.write(request(b, '3.00', 'loans-b')),
      writes.write(request('cl_no_such_limit', '1.00', 'loans-nowhere')),
    ]);
    expect(answers.map(outcomeOf)).toEqual([
      { status: 201, replayed: false },
      { status: 201, replayed: false },
      { status: 409, replayed: false },
      { status: 201, replayed: false },
      { error: 'not_found' },
    ]);
    // All five together; `full` and the unknown limit again alone, the long way.
    expect(counter.transactions).toBe(3);
    if (folds) {
      const joined = messages.sent().find((message) => message.includes('"loan":{'));
      expect(joined, 'the five loans went as one message').toMatch(
        /^BEGIN; SET LOCAL synchronous_commit = remote_apply; EXECUTE s_[0-9a-f]+\(.*\); EXECUTE s_[0-9a-f]+\(.*\); SET LOCAL lending\.event_context = '[^']*'; EXECUTE s_[0-9a-f]+\(.*\); COMMIT$/s,
      );
      for (const [uid, key] of [[a, 'loans-a'], [b, 'loans-b'], [c, 'loans-c']] as const) {
        expect(joined).toContain(`"${uid}":{"request_id":"req-${key}","idempotency_key":"${key}"}`);
      }
    }
    for (const [uid, outstanding, entries] of [[a, '3.00', 2], [b, '3.00', 1], [c, '4.00', 1], [full, '10.00', 0]] as const) {
      expect(await ledgerState(store(), writer().org.id, uid)).toEqual({ outstanding, entries });
    }
    const made = answers[1] as PromiseFulfilledResult<WriteAnswer>;
    expect(JSON.parse(made.value.body ?? '')).toMatchObject({ loan: { credit_limit: a, principal: 2, outstanding: 2, status: 'active' }, limit: { uid: a, outstanding: 3, balance: 97 } });
    // Sent again, each answers as first: the same bytes, the same refusal; the 404 again (nothing was stored).
    const again = await Promise.allSettled([writes.write(request(a, '2.00', 'loans-a')), writes.write(request(full, '1.00', 'loans-full')), writes.write(request('cl_no_such_limit', '1.00', 'loans-nowhere'))]);
    expect(again.map(outcomeOf)).toEqual([{ status: 201, replayed: true }, { status: 409, replayed: true }, { error: 'not_found' }]);
    expect((again[0] as PromiseFulfilledResult<WriteAnswer>).value.body).toBe(made.value.body);
    expect((again[1] as PromiseFulfilledResult<WriteAnswer>).value.refusal).toEqual((answers[2] as PromiseFulfilledResult<WriteAnswer>).value.refusal);
    // The loan's three events, once each, naming its own request.
    const events = await store().query<{ type: string; request_id: string }>(
      `SELECT type, request_id FROM (SELECT type, request_id FROM event_outbox WHERE org_id = $1 AND idempotency_key = $2
        UNION ALL SELECT type, request_id FROM events WHERE org_id = $1 AND idempotency_key = $2) e ORDER BY type`,
      [writer().org.id, 'loans-a'],
    );
    expect(events).toEqual(['credit_limit.updated', 'ledger_entry.created', 'loan.created'].map((type) => ({ type, request_id: 'req-loans-a' })));
  });
});
