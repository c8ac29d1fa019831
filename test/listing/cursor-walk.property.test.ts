import fc from 'fast-check';
import { expect, it } from 'vitest';
import { json, useApp, type Page } from '../helpers/app.js';
import { ENTITIES, expectedRecords, instant, TYPES, type Row } from '../helpers/list-model.js';
import { insertPaymentMethods, type PaymentMethodRow } from '../helpers/records.js';
import { describeEachStore } from '../helpers/stores.js';
import { createTenant } from '../helpers/tenants.js';

/*
 * A cursor walk while the list changes, against a model. Between pages the
 * test inserts records (created and updated "now") and updates records
 * (updated_at moves forward to "now", another field changes); the API has no
 * deletes. Guarantees checked:
 *  1. every record that matches the filter and is not changed during the
 *     walk is returned exactly once, whatever the ordering;
 *  2. in an order_by=updated_at walk, every record changed (or inserted)
 *     during the walk is returned too, and its last appearance is its
 *     latest state.
 * A page walk (page=1, 2, …) breaks both under the same writes, which the
 * last test shows, so the property is not vacuous.
 */

type Step = { kind: 'page' } | { kind: 'insert'; entity: string; type: string } | { kind: 'update'; pick: number; last2: string };

const step: fc.Arbitrary<Step> = fc.oneof(
  { arbitrary: fc.constant({ kind: 'page' as const }), weight: 3 },
  { arbitrary: fc.record({ kind: fc.constant('insert' as const), entity: fc.constantFrom(...ENTITIES), type: fc.constantFrom(...TYPES) }), weight: 2 },
  { arbitrary: fc.record({ kind: fc.constant('update' as const), pick: fc.nat(), last2: fc.constantFrom('01', '77') }), weight: 2 },
);

const initialRow = fc.record({
  entity: fc.constantFrom(...ENTITIES),
  type: fc.constantFrom(...TYPES),
  created_at: instant,
  updated_at: instant,
});

const ORDERINGS = ['-created_at', 'created_at', 'updated_at', '-updated_at', 'entity', '-type'];

/**
 * Always run first: 25 records (three pages), walked by updated_at while
 * three of them are updated and two are inserted between pages.
 */
const SYNC_WALK_EXAMPLE: [{ entity: string; type: string; created_at: string; updated_at: string }[], string | undefined, string, Step[]] = [
  fc.sample(initialRow, { seed: 42, numRuns: 25 }),
  undefined,
  'updated_at',
  [
    { kind: 'page' },
    { kind: 'update', pick: 0, last2: '77' },
    { kind: 'insert', entity: ENTITIES[0]!, type: TYPES[0]! },
    { kind: 'update', pick: 5, last2: '01' },
    { kind: 'page' },
    { kind: 'update', pick: 11, last2: '77' },
    { kind: 'insert', entity: ENTITIES[1]!, type: TYPES[1]! },
    { kind: 'page' },
  ],
];

/** A clock later than every generated instant, one millisecond a tick. */
function tick(n: number): string {
  return new Date(Date.UTC(2025, 0, 1) + n).toISOString().replace('Z', '000Z');
}

describeEachStore('a cursor walk while records are inserted and updated', (store) => {
  const app = useApp(store);

  async function walkWithWrites(
    initial: readonly { entity: string; type: string; created_at: string; updated_at: string }[],
    filter: Record<string, string>,
    orderBy: string,
    steps: readonly Step[],
    pageBy: 'cursor' | 'page',
  ): Promise<{ returned: Record<string, unknown>[]; finalRows: Row[]; changed: Set<string> }> {
    const tenant = await createTenant(store());
    const rows: Row[] = initial.map((row, i) => ({ ...row, uid: `pm_${i}`, id: String(i), currency: 'USD', last_2: '42' }));
    await insertPaymentMethods(store(), tenant.org.id, rows as unknown as PaymentMethodRow[]);
    const changed = new Set<string>();
    const returned: Record<string, unknown>[] = [];
    let clock = 0;
    let link: string | null = `/api/methods/?${new URLSearchParams({ ...filter, order_by: orderBy, ...(pageBy === 'cursor' ? { cursor: '' } : { page: '1' }) }).toString()}`;

    const fetchPage = async () => {
      if (!link) return;
      const url = new URL(link, 'http://localhost');
      const response = await app().inject({ url: url.pathname + url.search, headers: { authorization: tenant.authorization } });
      expect(response.statusCode).toBe(200);
      const page = json<Page>(response);
      returned.push(...page.items);
      link = page.next;
    };

    for (const next of steps) {
      if (!link) break;
      if (next.kind === 'page') await fetchPage();
      else if (next.kind === 'insert') {
        clock += 1;
        const row: Row = { uid: `new_${clock}`, id: String(rows.length), entity: next.entity, type: next.type, currency: 'USD', last_2: '42', created_at: tick(clock), updated_at: tick(clock) };
        rows.push(row);
        changed.add(row.uid!);
        await insertPaymentMethods(store(), tenant.org.id, [row as unknown as PaymentMethodRow]);
      } else if (rows.length > 0) {
        clock += 1;
        const row = rows[next.pick % rows.length]!;
        row.updated_at = tick(clock);
        row.last_2 = next.last2;
        changed.add(row.uid!);
        await store().query('UPDATE payment_methods SET updated_at = $1, last_2 = $2 WHERE org_id = $3 AND uid = $4', [row.updated_at, row.last_2, tenant.org.id, row.uid]);
      }
    }
    while (link) await fetchPage();
    return { returned, finalRows: rows, changed };
  }

  it('returns every unchanged matching record exactly once in any ordering, and every changed one in its latest state when ordered by updated_at', async () => {
    let changedChecked = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(initialRow, { minLength: 0, maxLength: 40 }),
        fc.option(fc.constantFrom(...ENTITIES), { nil: undefined }),
        fc.oneof(fc.constant('updated_at'), fc.constantFrom(...ORDERINGS)),
        fc.array(step, { minLength: 1, maxLength: 30 }),
        async (initial, entity, orderBy, steps) => {
          const filter: Record<string, string> = entity ? { entity } : {};
          const { returned, finalRows, changed } = await walkWithWrites(initial, filter, orderBy, steps, 'cursor');
          const matching = expectedRecords(finalRows, { ...filter, order_by: orderBy }, new Set());
          const times = new Map<string, number>();
          for (const item of returned) times.set(String(item.uid), (times.get(String(item.uid)) ?? 0) + 1);

          // No record outside the filter; (1) every unchanged match exactly once.
          for (const uid of times.keys()) expect(matching.some((row) => row.uid === uid), uid).toBe(true);
          for (const row of matching) if (!changed.has(row.uid!)) expect(times.get(row.uid!) ?? 0, row.uid).toBe(1);

          // (2) The sync walk: every changed match returned, last seen in its latest state.
          if (orderBy === 'updated_at') {
            for (const row of matching.filter((match) => changed.has(match.uid!))) {
              const lastSeen = returned.filter((item) => item.uid === row.uid).at(-1);
              expect(lastSeen, row.uid).toMatchObject({ updated_at: row.updated_at, last_2: row.last_2 });
              changedChecked += 1;
            }
          }
        },
      ),
      { numRuns: 80, examples: [SYNC_WALK_EXAMPLE] },
    );
    // Guard against a vacuous property: the sync walk met changed records.
    // The fixed example alone changes five matching records during an
    // updated_at walk; the random runs add more (a count of theirs alone is
    // seed-dependent: it fell to 7 of an expected ~40 once).
    expect(changedChecked).toBeGreaterThanOrEqual(5);
  });

  it('a page-number walk under the same writes skips or repeats records (why cursors exist)', async () => {
    // 20 records; page 1 read, then the first record is updated (moves to the
    // end in updated_at order), so page 2 starts one record later: one skipped.
    const initial = Array.from({ length: 20 }, (_, i) => ({ entity: 'ent_a', type: 'ACH', created_at: '2024-05-01T00:00:00.000000Z', updated_at: tick(-100 + i) }));
    const steps: Step[] = [{ kind: 'page' }, { kind: 'update', pick: 0, last2: '01' }];
    const byPage = await walkWithWrites(initial, {}, 'updated_at', steps, 'page');
    const byCursor = await walkWithWrites(initial, {}, 'updated_at', steps, 'cursor');
    const unchangedOf = (walk: typeof byPage) => walk.returned.map((item) => String(item.uid)).filter((uid) => uid !== 'pm_0');
    expect(new Set(unchangedOf(byPage)).size).toBe(18);
    expect(new Set(unchangedOf(byCursor)).size).toBe(19);
    expect(byCursor.returned.at(-1)).toMatchObject({ uid: 'pm_0', last_2: '01' });
  });
});
