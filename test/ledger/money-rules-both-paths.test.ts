import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { expect, it } from 'vitest';
import { ImportError } from '../../src/import/index.js';
import { applyLedgerEntry, LedgerError } from '../../src/ledger/index.js';
import { loanCreation } from '../../src/ledger/loan-operations.js';
import { creditLimits } from '../../src/resources/credit-limits.js';
import { loans } from '../../src/resources/loans.js';
import type { Store } from '../../src/store/store.js';
import { importLines } from '../helpers/import-lines.js';
import { ledgerOf } from '../helpers/ledger.js';
import { describeEachStore } from '../helpers/stores.js';
import { createTenant, type Tenant } from '../helpers/tenants.js';

// The money rules live twice: in the ledger's single-write statements (ledger/entry-statements.ts,
// loan-operations.ts) and in the import's set-based merge (import/merge-ledger.ts, merge-loans.ts).
// This runs the same steps through both, into twin organizations, and fails on any difference:
// accepted or refused, each limit's outstanding and balance after each step, and updated_at moving
// forward with every change and only then (by a microsecond where it stands in the future). One line per import: the import refuses a whole
// file on one overdraw, so a one-line file is the unit that compares with one write.

const LIMITS = ['cl_a', 'cl_b', 'cl_c'] as const;
const FUTURE = '2099-01-01T00:00:00.000000Z';

interface Step {
  readonly kind: 'drawdown' | 'repayment' | 'loan';
  readonly limit: number;
  readonly cents: number;
}

const step: fc.Arbitrary<Step> = fc.record({
  kind: fc.constantFrom('drawdown', 'drawdown', 'repayment', 'repayment', 'loan'),
  limit: fc.integer({ min: 0, max: LIMITS.length - 1 }),
  // Up to 400.00 against capacities of 100.00 or 250.00: many steps overdraw or over-repay, and round
  // amounts often fill a limit exactly or repay it to zero (the edges of both rules).
  cents: fc.oneof(fc.integer({ min: 1, max: 40_000 }), fc.constantFrom(1, 5_000, 10_000, 15_000, 25_000)),
});
const limitSetup = fc.record({ capacityCents: fc.constantFrom(10_000, 25_000), future: fc.boolean() });

const decimal = (cents: number) => `${Math.floor(cents / 100)}.${String(cents % 100).padStart(2, '0')}`;

interface LimitState {
  readonly uid: string;
  readonly outstanding: string;
  readonly balance: string;
  readonly updated_at: string;
}

async function limitsOf(store: Store, orgId: string): Promise<LimitState[]> {
  return store.query<LimitState>(
    `SELECT uid, outstanding::text AS outstanding, balance::text AS balance,
            to_char(updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS updated_at
       FROM credit_limits WHERE org_id = $1 ORDER BY uid`,
    [orgId],
  );
}

/** The same book in both organizations: each limit with a payment method a loan can be paid out to. */
async function twinBooks(store: Store, setups: readonly { capacityCents: number; future: boolean }[]): Promise<[Tenant, Tenant]> {
  const lines = LIMITS.flatMap((uid, i) => [
    { object: 'payment_method', uid: `pm_${uid}`, entity: `ent_${uid}`, type: 'ACH', currency: 'USD', last_2: '42' },
    {
      object: 'credit_limit',
      uid,
      entity: `ent_${uid}`,
      currency: 'USD',
      capacity: decimal(setups[i]?.capacityCents ?? 10_000),
      rate: '0',
      // A limit whose updated_at is ahead of the database's clock (another system's): no write may move it back.
      ...(setups[i]?.future ? { updated_at: FUTURE } : {}),
    },
  ]);
  const twins: Tenant[] = [];
  for (const name of ['ledger path', 'import path']) {
    const tenant = await createTenant(store, name, 'write');
    await importLines(store, tenant.org.uid, lines);
    twins.push(tenant);
  }
  return twins as [Tenant, Tenant];
}

/** One step as a single write through the process's ledger: accepted, or refused by a money rule. */
async function throughLedger(store: Store, tenant: Tenant, n: number, { kind, limit, cents }: Step): Promise<'accepted' | 'refused'> {
  const uid = LIMITS[limit] ?? '';
  if (kind === 'loan') {
    const operation = loanCreation({ loans, limits: creditLimits }, { orgId: tenant.org.id, keyId: tenant.keyId, creditLimit: uid, paymentMethod: `pm_${uid}`, principal: decimal(cents) });
    const answer = await ledgerOf(store).write({ operation, idempotency: { key: randomUUID(), keyId: tenant.keyId }, requestId: `step-${n}` });
    if (answer.status === 201) return 'accepted';
    expect(answer.refusal?.code).toBe('insufficient_balance');
    return 'refused';
  }
  try {
    await applyLedgerEntry(ledgerOf(store), tenant.org.id, { kind, id: `step_${n}`, limit: uid, amount: decimal(cents) });
    return 'accepted';
  } catch (error) {
    if (!(error instanceof LedgerError)) throw error;
    expect(error.code).toBe(kind === 'drawdown' ? 'insufficient_balance' : 'repayment_exceeds_outstanding');
    return 'refused';
  }
}

/** The same step as an import of one line: accepted, or the file refused for that line by a money rule. */
async function throughImport(store: Store, tenant: Tenant, n: number, { kind, limit, cents }: Step): Promise<'accepted' | 'refused'> {
  const uid = LIMITS[limit] ?? '';
  const line =
    kind === 'loan'
      ? { object: 'loan', uid: `ln_step_${n}`, credit_limit: uid, payment_method: `pm_${uid}`, principal: decimal(cents) }
      : { object: kind, id: `step_${n}`, limit: uid, amount: decimal(cents) };
  try {
    await importLines(store, tenant.org.uid, [line]);
    return 'accepted';
  } catch (error) {
    if (!(error instanceof ImportError)) throw error;
    expect(error.errors).toHaveLength(1);
    expect(error.errors[0]?.reason).toMatch(kind === 'repayment' ? /^repayment of .* exceeds the outstanding amount/ : /^drawdown of .* exceeds the balance/);
    return 'refused';
  }
}

/** updated_at as each path leaves it: later than before the step when the limit changed (in the future too), unchanged when not. */
function expectNeverBack(before: readonly LimitState[], after: readonly LimitState[]): void {
  for (const [i, limit] of after.entries()) {
    const earlier = before[i]?.updated_at ?? '';
    if (before[i]?.outstanding === limit.outstanding) expect(limit.updated_at, `${limit.uid}: unchanged, but updated_at moved`).toBe(earlier);
    else expect(limit.updated_at > earlier, `${limit.uid}: changed, but updated_at went from ${earlier} to ${limit.updated_at}`).toBe(true);
  }
}

const moneyOf = (limits: readonly LimitState[]) => limits.map(({ uid, outstanding, balance }) => ({ uid, outstanding, balance }));

describeEachStore('the money rules, through the ledger and through the import', (store) => {
  it('accept and refuse the same steps and leave every limit the same, updated_at never moving back', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(limitSetup, { minLength: LIMITS.length, maxLength: LIMITS.length }), fc.array(step, { minLength: 1, maxLength: 10 }), async (setups, steps) => {
        const [viaLedger, viaImport] = await twinBooks(store(), setups);
        let ledgerBefore = await limitsOf(store(), viaLedger.org.id);
        let importBefore = await limitsOf(store(), viaImport.org.id);
        expect(moneyOf(importBefore)).toEqual(moneyOf(ledgerBefore));
        for (const [n, current] of steps.entries()) {
          const written = await throughLedger(store(), viaLedger, n, current);
          const imported = await throughImport(store(), viaImport, n, current);
          expect({ step: n, ...current, outcome: imported }).toEqual({ step: n, ...current, outcome: written });
          const ledgerAfter = await limitsOf(store(), viaLedger.org.id);
          const importAfter = await limitsOf(store(), viaImport.org.id);
          expect(moneyOf(importAfter)).toEqual(moneyOf(ledgerAfter));
          expectNeverBack(ledgerBefore, ledgerAfter);
          expectNeverBack(importBefore, importAfter);
          if (written === 'refused') expect(ledgerAfter).toEqual(ledgerBefore);
          if (imported === 'refused') expect(importAfter).toEqual(importBefore);
          ledgerBefore = ledgerAfter;
          importBefore = importAfter;
        }
      }),
      { numRuns: 12 },
    );
  });
});
