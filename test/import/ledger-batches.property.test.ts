import fc from 'fast-check';
import { expect, it } from 'vitest';
import { ImportError, type ImportOptions } from '../../src/import/index.js';
import type { Store } from '../../src/store/store.js';
import { importLines } from '../helpers/import-lines.js';
import { describeEachStore } from '../helpers/stores.js';
import { createTenant } from '../helpers/tenants.js';

// The import stages ledger lines batch by batch and remembers, across batches, the limits it found
// (merge-ledger.ts). However a file is cut into batches, the outcome must be the same: the same refusals
// (line and reason), or the same balances, entries and events. A file imported in batches of two lines is
// compared with the same file imported in one batch, each into an organization of its own.
const LIMITS = ['cl_a', 'cl_b', 'cl_c'] as const;

const limitLine = fc.record({
  object: fc.constant('credit_limit'),
  uid: fc.constantFrom(...LIMITS),
  entity: fc.constant('ent_1'),
  currency: fc.constant('USD'),
  capacity: fc.constantFrom('100.00', '500.00'),
  rate: fc.constant('0.0005'),
});
const ledgerLine = fc.record({
  object: fc.constantFrom('drawdown', 'repayment'),
  // A few ids, so that some come back (with the same content or not); cl_x is defined nowhere.
  id: fc.constantFrom('le_1', 'le_2', 'le_3', 'le_4', 'le_5', 'le_6', 'le_7', 'le_8'),
  limit: fc.constantFrom(...LIMITS, 'cl_x'),
  amount: fc.constantFrom('10.00', '60.00', '150.00'),
  at: fc.constant('2025-01-01T00:00:00Z'),
});
// Each limit is defined at most once: a uid's lines that fall in different batches are applied one after the
// other (docs/import.md, "Upsert by uid"), a created then an updated event, where one batch keeps the last line.
const fileArbitrary = fc
  .array(fc.oneof({ arbitrary: ledgerLine, weight: 3 }, { arbitrary: limitLine, weight: 1 }), { minLength: 1, maxLength: 14 })
  .map((lines) => {
    const defined = new Set<string>();
    return lines.filter((line) => line.object !== 'credit_limit' || (!defined.has(line.uid) && Boolean(defined.add(line.uid))));
  });

type Outcome =
  | { refused: { line: number; reason: string }[]; total: number }
  | { limits: unknown[]; entries: unknown[]; events: unknown[]; applied: number; unchanged: number };

async function importOutcome(store: Store, lines: readonly object[], options: ImportOptions): Promise<Outcome> {
  const tenant = await createTenant(store);
  let summary;
  try {
    summary = await importLines(store, tenant.org.uid, lines, { ...options, importId: 'imp_same' });
  } catch (error) {
    if (!(error instanceof ImportError)) throw error;
    return { refused: [...error.errors], total: error.total };
  }
  const again = await importLines(store, tenant.org.uid, lines, options);
  expect(again.ledger_entries).toEqual({ applied: 0, unchanged: summary.ledger_entries.applied + summary.ledger_entries.unchanged });
  return {
    limits: await store.query(`SELECT uid, capacity::text, outstanding::text FROM credit_limits WHERE org_id = $1 ORDER BY uid`, [tenant.org.id]),
    entries: await store.query(
      `SELECT e.id, e.kind, e.amount::text, l.uid AS limit_uid, e.at
         FROM ledger_entries e JOIN credit_limits l ON l.org_id = e.org_id AND l.id = e.limit_id
        WHERE e.org_id = $1 ORDER BY l.uid, e.seq`,
      [tenant.org.id],
    ),
    events: await store.query(
      `SELECT type, object_uid, data_object - 'recorded_at' - 'updated_at' - 'created_at' AS data, previous_attributes - 'updated_at' AS before
         FROM event_outbox WHERE org_id = $1 ORDER BY type, object_uid`,
      [tenant.org.id],
    ),
    applied: summary.ledger_entries.applied,
    unchanged: summary.ledger_entries.unchanged,
  };
}

describeEachStore('import: ledger lines cut into batches', (store) => {
  it('a file imported two lines a batch gives what it gives in one batch: the same refusals, or the same balances, entries and events', { timeout: 600_000 }, async () => {
    await fc.assert(
      fc.asyncProperty(fileArbitrary, async (lines) => {
        const batched = await importOutcome(store(), lines, { batchLines: 2 });
        const whole = await importOutcome(store(), lines, {});
        expect(batched).toEqual(whole);
      }),
      { numRuns: 20 },
    );
  });
});
