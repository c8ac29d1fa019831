import fc from 'fast-check';
import { beforeAll, expect, it } from 'vitest';
import { entryOperation, LedgerWriter, limitViewOf, newLedgerId, type LedgerWriteRequest, type WriteAnswer } from '../../src/ledger/index.js';
import { loanCreation, type LoanResult } from '../../src/ledger/loan-operations.js';
import { creditLimits } from '../../src/resources/credit-limits.js';
import { loans } from '../../src/resources/loans.js';
import { creditLimit, insertCreditLimits, insertPaymentMethods, paymentMethod } from '../helpers/records.js';
import { describeEachStore } from '../helpers/stores.js';
import { createTenant, type Tenant } from '../helpers/tenants.js';

// Loan creations on distinct limits that wait together are written by ONE set-based statement
// (src/ledger/joined-loans.ts). The same random batches — loans made and refused (over the balance, an
// unknown limit or payment method, a method of another entity), several on one limit, keys sent again with
// the same body or reused for another — go through that path in one organization and one by one in its
// twin. Both must give the same answers byte for byte (new uids and times aside), the same balances,
// entries, loans and events (each loan made: exactly its three, naming its own request), and a key sent
// again afterwards must replay its stored answer's bytes.
describeEachStore('joined loans against loans one by one (differential)', (store) => {
  const views = { loans, limits: creditLimits };
  let joinedTwin: Tenant;
  let aloneTwin: Tenant;
  beforeAll(async () => {
    joinedTwin = await createTenant(store(), 'Joined loans', 'write');
    aloneTwin = await createTenant(store(), 'Loans one by one', 'write');
  });

  interface Step {
    /** 0–3: the run's limits (3 in EUR); 4: no such limit. */
    readonly limit: number;
    readonly method: 'own' | 'other entity' | 'missing';
    readonly cents: number;
    /** The key of an earlier write again: with its body (a replay) or, `reuse`, with another principal. */
    readonly again?: { readonly of: number; readonly reuse: boolean };
  }
  const step: fc.Arbitrary<Step> = fc.record({
    limit: fc.constantFrom(0, 0, 1, 1, 2, 3, 4),
    method: fc.constantFrom('own', 'own', 'own', 'own', 'other entity', 'missing'),
    cents: fc.integer({ min: 1, max: 6000 }),
    again: fc.option(fc.record({ of: fc.nat({ max: 20 }), reuse: fc.boolean() }), { nil: undefined, freq: 4 }),
  });

  /** A loan as both twins send it: the same key, request id and body. */
  interface Sent {
    readonly key: string;
    readonly limit: string;
    readonly method: string;
    readonly principal: string;
  }
  interface Outcome {
    readonly write: Sent;
    readonly answer?: WriteAnswer;
    readonly error?: { readonly code: unknown; readonly message: unknown };
  }
  const outcomeOf = (write: Sent, answer: Promise<WriteAnswer>): Promise<Outcome> =>
    answer.then(
      (a) => ({ write, answer: a }),
      (error: unknown) => ({ write, error: { code: (error as { code?: unknown }).code, message: (error as { message?: unknown }).message } }),
    );

  let joinedTogether = 0;

  it('gives the same answers, balances, entries, loans and events as the loans one by one', async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(fc.array(step, { minLength: 1, maxLength: 10 }), { minLength: 1, maxLength: 4 }), async (batches) => {
        run += 1;
        const prefix = `jl${run}x${Math.random().toString(36).slice(2, 8)}`;
        const limits = [0, 1, 2, 3].map((i) => `cl_${prefix}_${i}`);
        const lead = `cl_${prefix}_lead`;
        for (const twin of [joinedTwin, aloneTwin]) {
          await insertCreditLimits(store(), twin.org.id, [
            creditLimit({ uid: limits[0], entity: `ent_${prefix}_0`, capacity: '100.00' }),
            creditLimit({ uid: limits[1], entity: `ent_${prefix}_1`, capacity: '100.00' }),
            creditLimit({ uid: limits[2], entity: `ent_${prefix}_2`, capacity: '50.00', outstanding: '20.00' }),
            creditLimit({ uid: limits[3], entity: `ent_${prefix}_3`, capacity: '30.00', currency: 'EUR' }),
            creditLimit({ uid: lead, entity: 'ent_lead', capacity: '1000.00' }),
          ]);
          await insertPaymentMethods(
            store(),
            twin.org.id,
            [0, 1, 2, 3].map((i) => paymentMethod({ uid: `pm_${prefix}_${i}`, entity: `ent_${prefix}_${i}`, currency: i === 3 ? 'EUR' : 'USD' })),
          );
        }
        const joinedWriter = new LedgerWriter(store(), { idempotencyTtlHours: 24, queue: { concurrency: 1 } });
        const aloneWriter = new LedgerWriter(store(), { idempotencyTtlHours: 24 });
        const requestOf = (twin: Tenant, s: Sent): LedgerWriteRequest<LoanResult> => ({
          operation: loanCreation(views, { orgId: twin.org.id, keyId: twin.keyId, creditLimit: s.limit, paymentMethod: s.method, principal: s.principal }),
          idempotency: { key: s.key, keyId: twin.keyId },
          requestId: `req-${s.key}`,
        });

        const sent: Sent[] = [];
        const joinedOutcomes: Outcome[] = [];
        const aloneOutcomes: Outcome[] = [];
        for (const [b, batch] of batches.entries()) {
          const writes = batch.map((s): Sent => {
            const earlier = s.again && sent[s.again.of];
            // Another body under a key goes to the same limit: one lane, so both paths answer in the order sent.
            if (earlier) return s.again?.reuse ? { ...earlier, principal: (Number(earlier.principal) + 0.01).toFixed(2) } : earlier;
            const own = s.limit === 4 ? 0 : s.limit;
            const write = {
              key: `${prefix}-${sent.length}`,
              limit: s.limit === 4 ? `cl_${prefix}_missing` : (limits[s.limit] as string),
              method: s.method === 'missing' ? `pm_${prefix}_missing` : `pm_${prefix}_${s.method === 'own' ? own : (own + 1) % 4}`,
              principal: (s.cents / 100).toFixed(2),
            };
            sent.push(write);
            return write;
          });
          // One slot, busy with the lead: the batch's writes wait together, and the lone ones join.
          const leadWrite = joinedWriter.write({
            operation: entryOperation(limitViewOf(creditLimits), { orgId: joinedTwin.org.id, kind: 'drawdown', id: newLedgerId('drawdown'), limit: lead, amount: '0.01', keyId: joinedTwin.keyId }),
            idempotency: { key: `lead-${prefix}-${b}`, keyId: joinedTwin.keyId },
          });
          const [, ...answered] = await Promise.all([leadWrite, ...writes.map((write) => outcomeOf(write, joinedWriter.write(requestOf(joinedTwin, write))))]);
          joinedOutcomes.push(...answered);
          for (const write of writes) aloneOutcomes.push(await outcomeOf(write, aloneWriter.write(requestOf(aloneTwin, write))));
        }

        const joinedNames = await namesOf(joinedTwin, joinedOutcomes);
        const aloneNames = await namesOf(aloneTwin, aloneOutcomes);
        expect(joinedOutcomes.map((o) => shown(o, joinedNames))).toEqual(aloneOutcomes.map((o) => shown(o, aloneNames)));

        // Each key's stored answer (its first 201 or 409), asked again with its body: the same status and bytes.
        for (const [twin, writer, outcomes] of [
          [joinedTwin, joinedWriter, joinedOutcomes],
          [aloneTwin, aloneWriter, aloneOutcomes],
        ] as const) {
          for (const key of new Set(outcomes.map((o) => o.write.key))) {
            const first = outcomes.find((o) => o.write.key === key && o.answer);
            if (!first?.answer) continue;
            const again = await outcomeOf(first.write, writer.write(requestOf(twin, first.write)));
            expect(again.answer, `${key} asked again`).toEqual(
              first.answer.refusal ? { status: first.answer.status, replayed: true, refusal: first.answer.refusal } : { status: first.answer.status, replayed: true, body: first.answer.body, value: undefined },
            );
          }
        }

        const joinedBook = await bookOf(joinedTwin, prefix, joinedNames);
        expect(joinedBook).toEqual(await bookOf(aloneTwin, prefix, aloneNames));
        // Each loan made: its limit's, its own and its entry's events, once, naming its own request; nothing else.
        const made = [...new Set(joinedOutcomes.filter((o) => o.answer?.status === 201 && !o.answer.replayed).map((o) => o.write.key))];
        expect(joinedBook.events.map((e) => `${e.idempotency_key} ${e.type} ${e.request_id}`)).toEqual(
          made.flatMap((key) => ['credit_limit.updated', 'ledger_entry.created', 'loan.created'].map((type) => `${key} ${type} req-${key}`)).sort(),
        );

        const [together] = await store().query<{ n: number }>(
          'SELECT count(*)::int AS n FROM (SELECT created_at FROM loans WHERE org_id = $1 AND credit_limit LIKE $2 GROUP BY created_at HAVING count(*) > 1) t',
          [joinedTwin.org.id, `cl_${prefix}_%`],
        );
        joinedTogether += Number(together?.n ?? 0);
      }),
      { numRuns: 10 },
    );
    // The runs went through the joined statement: several loans made in one transaction (one created_at).
    expect(joinedTogether).toBeGreaterThan(0);
  });

  /** The run's new loan uids and entry ids, named by the key of the request that made them (their 201s); the twin's API key. */
  async function namesOf(twin: Tenant, outcomes: readonly Outcome[]): Promise<Map<string, string>> {
    const names = new Map<string, string>([[twin.keyId, 'KEY']]);
    for (const { write, answer } of outcomes) {
      if (answer?.status !== 201 || answer.body === undefined) continue;
      names.set((JSON.parse(answer.body) as { loan: { uid: string } }).loan.uid, `loan(${write.key})`);
    }
    const entries = await store().query<{ id: string; loan: string }>('SELECT id, loan FROM ledger_entries WHERE org_id = $1 AND loan = ANY ($2::text[])', [twin.org.id, [...names.keys()]]);
    for (const { id, loan } of entries) names.set(id, `entry(${names.get(loan) ?? '?'})`);
    return names;
  }

  /** Text with every new uid named and every time blanked: what the two twins must write alike. */
  function named(text: string, names: Map<string, string>): string {
    let out = text.replace(/\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:[0-9.]+(?:Z|[+-]\d{2}(?::\d{2})?)/g, 'TIME');
    for (const [uid, name] of names) out = out.replaceAll(uid, name);
    return out;
  }

  function shown(outcome: Outcome, names: Map<string, string>): unknown {
    const { answer, error } = outcome;
    if (!answer) return { key: outcome.write.key, error };
    return { key: outcome.write.key, status: answer.status, replayed: answer.replayed, body: answer.body === undefined ? undefined : named(answer.body, names), refusal: answer.refusal };
  }

  async function bookOf(twin: Tenant, prefix: string, names: Map<string, string>) {
    const limitRows = await store().query<{ uid: string; outstanding: string; balance: string }>(
      'SELECT uid, outstanding::text, balance::text FROM credit_limits WHERE org_id = $1 AND uid LIKE $2 AND uid <> $3 ORDER BY uid',
      [twin.org.id, `cl_${prefix}_%`, `cl_${prefix}_lead`],
    );
    const entryRows = await store().query<Record<string, string>>(
      `SELECT l.uid AS limit_uid, e.id, e.kind, e.amount::text AS amount, coalesce(e.reference, '') AS reference, (e.key_id = $3)::text AS own_key, e.loan
         FROM ledger_entries e JOIN credit_limits l ON l.org_id = e.org_id AND l.id = e.limit_id
        WHERE e.org_id = $1 AND l.uid LIKE $2 AND l.uid <> $4`,
      [twin.org.id, `cl_${prefix}_%`, twin.keyId, `cl_${prefix}_lead`],
    );
    const loanRows = await store().query<Record<string, string>>(
      `SELECT uid, entity, credit_limit, payment_method, currency, principal::text AS principal, outstanding::text AS outstanding, status, coalesce(reference, '') AS reference
         FROM loans WHERE org_id = $1 AND credit_limit LIKE $2`,
      [twin.org.id, `cl_${prefix}_%`],
    );
    const events = await store().query<{ type: string; object_uid: string; request_id: string; idempotency_key: string; data: string; previous: string }>(
      `SELECT type, object_uid, request_id, idempotency_key, data_object::text AS data, coalesce(previous_attributes::text, '') AS previous FROM event_outbox
        WHERE org_id = $1 AND idempotency_key LIKE $2
       UNION ALL
       SELECT type, object_uid, request_id, idempotency_key, data_object::text, coalesce(previous_attributes::text, '') FROM events
        WHERE org_id = $1 AND idempotency_key LIKE $2`,
      [twin.org.id, `${prefix}-%`],
    );
    const sortedTexts = (rows: readonly Record<string, string>[]) => rows.map((row) => named(JSON.stringify(row), names)).sort();
    return {
      limits: limitRows,
      entries: sortedTexts(entryRows),
      loans: sortedTexts(loanRows),
      events: events
        .map((e) => ({ ...e, object_uid: named(e.object_uid, names), data: named(e.data, names), previous: named(e.previous, names) }))
        .sort((a, b) => (`${a.idempotency_key} ${a.type}` < `${b.idempotency_key} ${b.type}` ? -1 : 1)),
    };
  }
});
