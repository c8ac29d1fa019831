import { readFile } from 'node:fs/promises';
import fc from 'fast-check';
import { expect, it } from 'vitest';
import type { Transaction } from '../../src/store/store.js';
import { describeEachStore } from '../helpers/stores.js';
import { createTenant } from '../helpers/tenants.js';

// Migration 029 rewrote the outbox triggers so that each row is rendered to jsonb once (the import's ledger
// lines spend most of their database time in them). The events must be those of 027's triggers, member for
// member: the same random writes run twice in one transaction — with 029's triggers, then, rolled back to
// before them, with 027's put back — must leave the same outbox rows.
const TRIGGERS_027 = new URL('../../src/store/migrations/027_joined_write_causes.sql', import.meta.url);

const limitArbitrary = fc.record({
  entity: fc.constantFrom('ent_a', 'ent_b'),
  capacity: fc.constantFrom('100.00', '250.50', '1000.00'),
  rate: fc.constantFrom('0.0005', '0.00100000'),
  // Whether the context names this limit's own cause (027's `objects`).
  ownCause: fc.boolean(),
  change: fc.option(
    fc.record({
      capacity: fc.constantFrom('100.00', '300.00', '1000.00'),
      rate: fc.constantFrom('0.0005', '0.002'),
      outstanding: fc.constantFrom('0.00', '12.34', '99.99'),
    }),
    { nil: undefined },
  ),
});
const entryArbitrary = fc.record({ limit: fc.nat(), kind: fc.constantFrom('drawdown', 'repayment'), amount: fc.constantFrom('1.00', '10.50', '20.00') });
const loanArbitrary = fc.record({ limit: fc.nat(), principal: fc.constantFrom('50.00', '80.00'), outstandingAfter: fc.constantFrom('50.00', '20.00', '0.00') });
const scenarioArbitrary = fc.record({
  limits: fc.array(limitArbitrary, { minLength: 1, maxLength: 5 }),
  entries: fc.array(entryArbitrary, { maxLength: 8 }),
  loans: fc.array(loanArbitrary, { maxLength: 3 }),
});
type Scenario = typeof scenarioArbitrary extends fc.Arbitrary<infer T> ? T : never;

const AT = '2025-03-01T10:00:00.123456Z';
const LATER = '2025-03-02T11:30:00Z';

/** The scenario's writes, through the tables (and so their triggers) as any write path makes them. */
async function write(tx: Transaction, orgId: string, scenario: Scenario): Promise<void> {
  const limitUid = (index: number) => `cl_${index % scenario.limits.length}`;
  const objects = Object.fromEntries(
    scenario.limits.flatMap((limit, index) => (limit.ownCause ? [[limitUid(index), { request_id: `req_${index}`, idempotency_key: `key_${index}` }]] : [])),
  );
  const context = { import_id: 'imp_same', request_id: 'req_all', objects: { credit_limit: objects } };
  await tx.query(`SELECT set_config('lending.event_context', $1, true)`, [JSON.stringify(context)]);
  await tx.query(
    `INSERT INTO credit_limits (org_id, uid, entity, currency, capacity, rate, created_at, updated_at)
     SELECT $1, v.uid, v.entity, 'USD', v.capacity, v.rate, $5, $5
       FROM unnest($2::text[], $3::text[], $4::numeric[], $6::numeric[]) AS v (uid, entity, capacity, rate)`,
    [orgId, scenario.limits.map((_, index) => limitUid(index)), scenario.limits.map((limit) => limit.entity), scenario.limits.map((limit) => limit.capacity), AT, scenario.limits.map((limit) => limit.rate)],
  );
  if (scenario.entries.length > 0) {
    await tx.query(
      `INSERT INTO ledger_entries (org_id, id, limit_id, kind, amount, at)
       SELECT $1, v.id, l.id, v.kind, v.amount, $6
         FROM unnest($2::text[], $3::text[], $4::text[], $5::numeric[]) AS v (id, limit_uid, kind, amount)
         JOIN credit_limits l ON l.org_id = $1 AND l.uid = v.limit_uid`,
      [orgId, scenario.entries.map((_, index) => `le_${index}`), scenario.entries.map((entry) => limitUid(entry.limit)), scenario.entries.map((entry) => entry.kind), scenario.entries.map((entry) => entry.amount), AT],
    );
  }
  const changed = scenario.limits.flatMap((limit, index) => (limit.change ? [{ uid: limitUid(index), ...limit.change }] : []));
  await tx.query(
    `UPDATE credit_limits l SET capacity = v.capacity, rate = v.rate, outstanding = v.outstanding, updated_at = $6
       FROM unnest($2::text[], $3::numeric[], $4::numeric[], $5::numeric[]) AS v (uid, capacity, rate, outstanding)
      WHERE l.org_id = $1 AND l.uid = v.uid`,
    [orgId, changed.map((c) => c.uid), changed.map((c) => c.capacity), changed.map((c) => c.rate), changed.map((c) => c.outstanding), LATER],
  );
  if (scenario.loans.length === 0) return;
  const loanUids = scenario.loans.map((_, index) => `ln_${index}`);
  await tx.query(
    `INSERT INTO loans (org_id, uid, entity, credit_limit, payment_method, currency, principal, outstanding, created_at, updated_at)
     SELECT $1, v.uid, 'ent_a', v.credit_limit, 'pm_a', 'USD', v.principal, v.principal, $5, $5
       FROM unnest($2::text[], $3::text[], $4::numeric[]) AS v (uid, credit_limit, principal)`,
    [orgId, loanUids, scenario.loans.map((loan) => limitUid(loan.limit)), scenario.loans.map((loan) => loan.principal), AT],
  );
  // Paid off in full: loan.repaid (the own-status event type); in part: loan.updated; unchanged: none.
  await tx.query(
    `UPDATE loans n SET outstanding = least(v.outstanding, n.principal), updated_at = CASE WHEN v.outstanding >= n.principal THEN n.updated_at ELSE $4 END
       FROM unnest($2::text[], $3::numeric[]) AS v (uid, outstanding)
      WHERE n.org_id = $1 AND n.uid = v.uid`,
    [orgId, loanUids, scenario.loans.map((loan) => loan.outstandingAfter), LATER],
  );
}

async function outbox(tx: Transaction, orgId: string): Promise<unknown[]> {
  return tx.query(
    `SELECT type, object_uid, data_object, previous_attributes, request_id, idempotency_key, import_id
       FROM event_outbox WHERE org_id = $1 ORDER BY id`,
    [orgId],
  );
}

class RolledBack extends Error {}

describeEachStore('outbox triggers (migration 029): the same events as 027', (store) => {
  it('random inserts and updates of limits, entries and loans leave the same outbox rows under both versions of the triggers', { timeout: 300_000 }, async () => {
    const earlier = await readFile(TRIGGERS_027, 'utf8');
    const tenant = await createTenant(store());
    await fc.assert(
      fc.asyncProperty(scenarioArbitrary, async (scenario) => {
        let rendered: { now: unknown[]; before: unknown[] } | undefined;
        await store()
          .transaction(async (tx) => {
            await tx.exec('SAVEPOINT scenario');
            await write(tx, tenant.org.id, scenario);
            const now = await outbox(tx, tenant.org.id);
            await tx.exec('ROLLBACK TO SAVEPOINT scenario');
            await tx.exec(earlier);
            await write(tx, tenant.org.id, scenario);
            rendered = { now, before: await outbox(tx, tenant.org.id) };
            throw new RolledBack();
          })
          .catch((error: unknown) => {
            if (!(error instanceof RolledBack)) throw error;
          });
        expect(rendered?.now.length).toBeGreaterThanOrEqual(scenario.limits.length + scenario.entries.length);
        expect(rendered?.now).toEqual(rendered?.before);
      }),
      { numRuns: 25 },
    );
  });
});
