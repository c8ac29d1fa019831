import fc from 'fast-check';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { buildApp } from '../helpers/app.js';
import { ImportError } from '../../src/import/index.js';
import { applyLedgerEntry, LedgerError } from '../../src/ledger/index.js';
import { ledgerOf } from '../helpers/ledger.js';
import type { Store } from '../../src/store/store.js';
import { databaseNow, importLines } from '../helpers/import-lines.js';
import { describeEachStore } from '../helpers/stores.js';
import { createTenant, type Tenant } from '../helpers/tenants.js';

// Times a line or an entry may carry: the past (a backdated entry), and — for records only — the future.
const PAST = ['2020-01-01T00:00:00Z', '2024-06-01T00:00:00Z'] as const;
const FUTURE = '2099-01-01T00:00:00Z';
const LIMITS = ['cl_a', 'cl_b'] as const;

const maybe = <T>(arbitrary: fc.Arbitrary<T>) => fc.option(arbitrary, { nil: undefined });

const paymentMethodLine = fc.record({
  object: fc.constant('payment_method'),
  uid: fc.constantFrom('pm_a', 'pm_b'),
  entity: fc.constantFrom('ent_1', 'ent_2'),
  type: fc.constantFrom('ACH', 'SEPA'),
  currency: fc.constantFrom('USD', 'EUR'),
  last_2: fc.constantFrom('12', '34'),
  updated_at: maybe(fc.constantFrom(...PAST, FUTURE)),
});
const creditLimitLine = fc.record({
  object: fc.constant('credit_limit'),
  uid: fc.constantFrom(...LIMITS),
  entity: fc.constant('ent_1'),
  currency: fc.constant('USD'),
  capacity: fc.constantFrom('100', '300', '1000'),
  rate: fc.constantFrom('0.0005', '0.001'),
  updated_at: maybe(fc.constantFrom(...PAST, FUTURE)),
});
const ledgerLine = fc.record({
  object: fc.constantFrom('drawdown', 'repayment'),
  limit: fc.constantFrom(...LIMITS),
  amount: fc.constantFrom('10', '50', '250'),
  at: maybe(fc.constantFrom(...PAST, FUTURE)),
});

const step = fc.oneof(
  fc.record({ kind: fc.constant('import' as const), lines: fc.array(fc.oneof(paymentMethodLine, creditLimitLine, ledgerLine), { minLength: 1, maxLength: 4 }) }),
  fc.record({
    kind: fc.constant('entry' as const),
    entry: fc.record({ object: fc.constantFrom('drawdown' as const, 'repayment' as const), limit: fc.constantFrom(...LIMITS), amount: fc.constantFrom('10', '50', '250'), at: maybe(fc.constantFrom(...PAST, FUTURE)) }),
  }),
);

interface StoredRecord {
  key: string;
  path: 'methods' | 'limits';
  uid: string;
  fields: string;
  updated_at: string;
}

/** Every record of the organization: its fields other than updated_at, and updated_at. */
async function snapshot(store: Store, orgId: string): Promise<Map<string, StoredRecord>> {
  const rows = await store.query<StoredRecord>(
    `SELECT 'methods' AS path, uid, concat_ws('|', entity, type, currency, last_2, created_at) AS fields,
            to_char(updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS updated_at
       FROM payment_methods WHERE org_id = $1
     UNION ALL
     SELECT 'limits', uid, concat_ws('|', entity, currency, capacity, rate, outstanding, created_at),
            to_char(updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
       FROM credit_limits WHERE org_id = $1`,
    [orgId],
  );
  return new Map(rows.map((row) => [`${row.path}/${row.uid}`, { ...row, key: `${row.path}/${row.uid}` }]));
}

describeEachStore('updated_at only moves forward, and moves with every change', (store) => {
  let app: FastifyInstance;
  beforeAll(async () => {
    app = await buildApp({ store: store() });
  });
  afterAll(async () => {
    await app.close();
  });

  const uidsUpdatedFrom = async (tenant: Tenant, path: string, from: string): Promise<string[]> => {
    const response = await app.inject({ method: 'GET', url: `/api/${path}/?updated_from=${encodeURIComponent(from)}`, headers: { authorization: tenant.authorization } });
    expect(response.statusCode).toBe(200);
    return (response.json() as { items: { uid: string }[] }).items.map((item) => item.uid);
  };

  it('after any sequence of imports and ledger entries, every record whose fields changed is returned by updated_from=<a time before the change>', async () => {
    let ids = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 6 }), async (steps) => {
        const tenant = await createTenant(store());
        for (const current of steps) {
          const before = await databaseNow(store());
          const old = await snapshot(store(), tenant.org.id);
          // Records an import creates with a given (historical) updated_at keep it: no client has seen them yet.
          const historical = new Set<string>();
          try {
            if (current.kind === 'import') {
              const lines = current.lines.map((line) => {
                const clean = Object.fromEntries(Object.entries(line).filter(([, value]) => value !== undefined));
                if (line.object === 'payment_method' || line.object === 'credit_limit') {
                  if (line.updated_at !== undefined) historical.add(`${line.object === 'payment_method' ? 'methods' : 'limits'}/${line.uid}`);
                  return clean;
                }
                return { ...clean, id: `e${(ids += 1)}` };
              });
              await importLines(store(), tenant.org.uid, lines);
            } else {
              const { object, ...entry } = current.entry;
              await applyLedgerEntry(ledgerOf(store()), tenant.org.id, { kind: object, id: `e${(ids += 1)}`, ...entry });
            }
          } catch (error) {
            if (!(error instanceof ImportError) && !(error instanceof LedgerError)) throw error;
          }
          const now = await snapshot(store(), tenant.org.id);
          for (const record of now.values()) {
            const previous = old.get(record.key);
            if (previous) expect(record.updated_at >= previous.updated_at, `${record.key}: updated_at moved back`).toBe(true);
            if (previous?.fields === record.fields) continue;
            // Each state of a record has its own updated_at: a webhook receiver drops stale states by it.
            if (previous) expect(record.updated_at > previous.updated_at, `${record.key}: changed without a later updated_at`).toBe(true);
            if (!previous && historical.has(record.key)) continue;
            expect(await uidsUpdatedFrom(tenant, record.path, before), `${record.key} changed after ${before}`).toContain(record.uid);
          }
        }
      }),
      { numRuns: 15 },
    );
  });
});
