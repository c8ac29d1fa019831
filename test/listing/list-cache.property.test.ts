import fc from 'fast-check';
import { expect, it } from 'vitest';
import { json, useApp, type Page } from '../helpers/app.js';
import { RESOURCES } from '../../src/resources/index.js';
import type { ResourceDefinition } from '../../src/listing/resource-definition.js';
import { fixtureFor, insertRecords, modelRecord } from '../helpers/fixtures/index.js';
import { definitionQueryArbitrary, expectedForDefinition, rangeIsEmpty, type ModelQuery, type Row } from '../helpers/list-model.js';
import { describeEachStore } from '../helpers/stores.js';
import { createTenant, type Tenant } from '../helpers/tenants.js';
import type { Store } from '../../src/store/store.js';

/*
 * Remembered counts and deep-page anchors (ListCache) against the in-memory
 * model, for every collection in RESOURCES that has countedRows, while records are inserted,
 * changed and deleted between requests. The anchor stride is 3 rows, so
 * every page after the first starts from an anchor, and every query is asked
 * twice, so the second answer comes from what the first remembered.
 * Ledger-style writes (only the columns behind the definition's
 * volatileFields, e.g. a credit limit's outstanding and updated_at) do not
 * move the table's version: lists by those fields must never be served from
 * the cache, and the others stay right.
 */

type Operation =
  | { kind: 'query'; query: ModelQuery; page: number }
  | { kind: 'insert'; row: Row }
  | { kind: 'update'; index: number; row: Row }
  | { kind: 'delete'; index: number }
  | { kind: 'ledger'; index: number; row: Row };

/** The stored columns a ledger-style write changes: the fixture's columns behind the definition's volatile fields. */
function volatileColumns(resource: ResourceDefinition): string[] {
  const sample = fc.sample(fixtureFor(resource).record, {
    seed: 1,
    numRuns: 1,
  })[0]!;
  return (resource.volatileFields ?? []).map((field) => resource.fields[field]!.column).filter((column) => column in sample);
}

function operations(resource: ResourceDefinition): fc.Arbitrary<Operation[]> {
  const row = fixtureFor(resource).record;
  const writes: fc.Arbitrary<Operation>[] = [
    fc.record({ kind: fc.constant('insert' as const), row }),
    fc.record({ kind: fc.constant('update' as const), index: fc.nat(), row }),
    fc.record({ kind: fc.constant('delete' as const), index: fc.nat() }),
  ];
  if (volatileColumns(resource).length > 0) writes.push(fc.record({ kind: fc.constant('ledger' as const), index: fc.nat(), row }));
  const query = fc.record({
    kind: fc.constant('query' as const),
    query: definitionQueryArbitrary(resource),
    page: fc.integer({ min: 1, max: 5 }),
  });
  return fc.array(fc.oneof({ arbitrary: query, weight: 3 }, ...writes.map((arbitrary) => ({ arbitrary, weight: 1 }))), {
    minLength: 6,
    maxLength: 18,
  });
}

describeEachStore('remembered counts and page anchors against the model, across writes', (store) => {
  const app = useApp(store, {
    listCache: { entries: 50, anchorStride: 3, maxAnchors: 10_000 },
  });

  // Only collections with countedRows are served through the cache (a nested
  // collection never is: its lists are one parent's, which the organization's
  // table version does not describe); the others are the model suite's.
  for (const resource of RESOURCES.filter((candidate) => candidate.countedRows)) {
    it(`GET /api/${resource.path}/ stays exact while records are inserted, changed and deleted`, async () => {
      let anchoredAnswers = 0;
      let answersAfterWrites = 0;
      let ledgerWrites = 0;
      await fc.assert(
        fc.asyncProperty(
          fc.array(fixtureFor(resource).record, {
            minLength: 15,
            maxLength: 45,
          }),
          operations(resource),
          async (initial, steps) => {
            const tenant = await createTenant(store());
            const model = new Model(resource, store(), tenant);
            await model.insert(initial);
            try {
              await run();
            } finally {
              ledgerWrites += model.ledgerWrites;
            }
            async function run(): Promise<void> {
              // Every write is followed by the lists asked so far: the same
              // lists, now possibly remembered at an older version.
              const asked: Extract<Operation, { kind: 'query' }>[] = [];
              for (const step of steps) {
                if (step.kind === 'query') {
                  if (rangeIsEmpty(step.query.query)) continue;
                  asked.push(step);
                  await check(step);
                  continue;
                }
                await model.apply(step);
                for (const earlier of asked.slice(-6)) {
                  await check(earlier);
                  answersAfterWrites += 1;
                }
              }
            }

            async function check(step: Extract<Operation, { kind: 'query' }>): Promise<void> {
              const expected = expectedForDefinition(resource, model.rows(), step.query);
              const lastPage = Math.max(1, Math.ceil(expected.length / 10));
              const url = `/api/${resource.path}/?${new URLSearchParams({ ...step.query.query, page: String(step.page) }).toString()}`;
              // Twice: the second answer comes from what the first remembered.
              for (let ask = 0; ask < 2; ask += 1) {
                const response = await app().inject({
                  url,
                  headers: { authorization: tenant.authorization },
                });
                if (step.page > lastPage) {
                  expect(response.statusCode).toBe(404);
                  continue;
                }
                expect(response.statusCode).toBe(200);
                const body = json<Page>(response);
                expect(body.count).toBe(expected.length);
                expect(body.items.map((item) => item.uid)).toEqual(expected.slice((step.page - 1) * 10, step.page * 10).map((r) => r.uid));
                if (step.page > 1) anchoredAnswers += 1;
              }
            }
          },
        ),
        { numRuns: 25 },
      );
      // Not vacuous: deep pages and answers after writes were compared.
      expect(anchoredAnswers).toBeGreaterThan(10);
      expect(answersAfterWrites).toBeGreaterThan(30);
      if (volatileColumns(resource).length > 0) expect(ledgerWrites).toBeGreaterThan(5);
    });
  }
});

/** The records of one organization, in the database and in memory, changed the same way. */
class Model {
  private readonly byUid = new Map<string, Row>();
  private nextId = 0;
  /** Ledger-style writes the database accepted. */
  ledgerWrites = 0;

  constructor(
    private readonly resource: ResourceDefinition,
    private readonly store: Store,
    private readonly tenant: Tenant,
  ) {}

  /** As the API shows them: with the columns the database derives, and the insertion-order id. */
  rows(): Row[] {
    return [...this.byUid.values()].map((row) => modelRecord(this.resource, row));
  }

  /** Inserts in order, so ids ascend with insertion order (the model only compares them). */
  async insert(rows: readonly Row[]): Promise<void> {
    const added = rows.map((row) => ({
      ...row,
      uid: `${this.resource.path}_${this.nextId++}`,
    }));
    await insertRecords(this.store, this.resource, this.tenant.org.id, added);
    for (const row of added)
      this.byUid.set(row.uid, {
        ...row,
        id: row.uid.slice(this.resource.path.length + 1),
      });
  }

  async apply(step: Exclude<Operation, { kind: 'query' }>): Promise<void> {
    if (step.kind === 'insert') return this.insert([step.row]);
    const uids = [...this.byUid.keys()];
    if (uids.length === 0) return;
    const uid = uids[step.index % uids.length]!;
    const current = this.byUid.get(uid)!;
    const where = 'WHERE org_id = $1 AND uid = $2';
    if (step.kind === 'delete') {
      await this.store.query(`DELETE FROM ${this.resource.table} ${where}`, [this.tenant.org.id, uid]);
      this.byUid.delete(uid);
      return;
    }
    // An update sets every stored column; a ledger-style write only the volatile ones.
    const columns = step.kind === 'ledger' ? volatileColumns(this.resource) : Object.keys(step.row).filter((column) => column !== 'uid' && column !== 'id');
    const assignments = columns.map((column, i) => `${column} = $${i + 3}${this.castOf(column)}`).join(', ');
    try {
      await this.store.query(`UPDATE ${this.resource.table} SET ${assignments} ${where}`, [
        this.tenant.org.id,
        uid,
        ...columns.map((column) => step.row[column]),
      ]);
    } catch (error) {
      // Volatile values from another fixture record may break a check of the
      // table (e.g. outstanding within capacity): the write changed nothing.
      if (step.kind === 'ledger' && (error as { code?: string }).code === '23514') return;
      throw error;
    }
    if (step.kind === 'ledger') this.ledgerWrites += 1;
    this.byUid.set(uid, {
      ...current,
      ...Object.fromEntries(columns.map((column) => [column, step.row[column]!])),
    });
  }

  private castOf(column: string): string {
    const field = Object.values(this.resource.fields).find((candidate) => candidate.column === column);
    return field?.type === 'timestamp' ? '::timestamptz' : field?.type === 'decimal' ? '::numeric' : '';
  }
}
