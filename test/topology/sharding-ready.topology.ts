import { expect, it } from 'vitest';
import { applyLedgerEntry } from '../../src/ledger/index.js';
import { ListCache } from '../../src/listing/list-cache.js';
import { listRecords, retrieveRecord } from '../../src/listing/list-records.js';
import { scopeToParent } from '../../src/listing/parent-scope.js';
import { parseListQuery } from '../../src/listing/query-parser.js';
import { RESOURCES } from '../../src/resources/index.js';
import type { QueryOptions, Store, Transaction } from '../../src/store/store.js';
import { insertRecords, PARENT_UID, sampleRecords } from '../helpers/fixtures/index.js';
import { creditLimit, insertCreditLimits } from '../helpers/records.js';
import { describeEachStore } from '../helpers/stores.js';
import { createTenant } from '../helpers/tenants.js';

/**
 * Tables kept whole on every node of a sharded deployment (reference tables):
 * small, read by id at authentication, never listed. Every other table is
 * sharded by org_id (docs/scaling.md).
 */
const REFERENCE_TABLES = ['organizations', 'api_keys', 'schema_migrations', 'installation_secrets'];

/** A Store that records every statement text it is given, in transactions too. */
function recording(store: Store): { store: Store; statements: string[] } {
  const statements: string[] = [];
  const record = (sql: string) => statements.push(sql.replace(/\s+/g, ' ').trim());
  const wrapTx = (tx: Transaction): Transaction => ({
    query: (sql, params, options) => (record(sql), tx.query(sql, params, options)),
    exec: (sql) => (record(sql), tx.exec(sql)),
    copyFrom: (target, chunks) => (record(`COPY ${target}`), tx.copyFrom(target, chunks)),
    queryAtCommit: (sql, params) => (record(sql), tx.queryAtCommit(sql, params)),
  });
  const wrapped: Store = {
    kind: store.kind,
    description: store.description,
    query: <Row>(sql: string, params?: readonly unknown[], options?: QueryOptions) => (record(sql), store.query<Row>(sql, params, options)),
    exec: (sql) => (record(sql), store.exec(sql)),
    transaction: (fn, options) => store.transaction((tx) => fn(wrapTx(tx)), options),
    ping: () => store.ping(),
    close: () => store.close(),
  };
  return { store: wrapped, statements };
}

describeEachStore('sharding-ready schema and statements', (store) => {
  it('includes org_id in every primary key, unique constraint and foreign key of every sharded table', async () => {
    const constraints = await store().query<{ table_name: string; name: string; kind: string; columns: string[] }>(
      `SELECT c.conrelid::regclass::text AS table_name, c.conname AS name, c.contype::text AS kind,
              array(SELECT a.attname::text FROM unnest(c.conkey) k JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k) AS columns
         FROM pg_constraint c JOIN pg_class t ON t.oid = c.conrelid
        WHERE t.relnamespace = current_schema()::regnamespace AND c.contype IN ('p', 'u', 'f') AND t.relkind = 'r'`,
    );
    const sharded = constraints.filter((c) => !REFERENCE_TABLES.includes(c.table_name.replace(/^.*\./, '')));
    expect(sharded.length).toBeGreaterThan(5);
    const without = sharded.filter((c) => !c.columns.includes('org_id')).map((c) => `${c.table_name}.${c.name} (${c.columns.join(', ')})`);
    expect(without).toEqual([]);
  });

  it('filters on one org_id in every statement the list engine and the ledger run', async () => {
    const tenant = await createTenant(store());
    for (const resource of RESOURCES) await insertRecords(store(), resource, tenant.org.id, sampleRecords(resource, 25));
    await insertCreditLimits(store(), tenant.org.id, [creditLimit({ uid: 'cl_1', entity: 'ent_1', capacity: '100.00' })]);
    const { store: recorded, statements } = recording(store());
    // Small anchor stride, so deep pages go through the anchored statements too.
    const cache = new ListCache({ entries: 100, anchorStride: 10, maxAnchors: 1000 });
    for (const resource of RESOURCES) {
      const equality = resource.filters.find((filter) => filter.operator === '=');
      const sample = sampleRecords(resource, 2)[1]!;
      const byValue = equality ? [`${equality.param}=${encodeURIComponent(sample[resource.fields[equality.field]!.column] ?? '')}`] : [];
      const byLastOrdering = `order_by=${resource.orderings[resource.orderings.length - 1]}`;
      for (const raw of ['', 'page=2', 'page=3', ...byValue, 'order_by=-created_at&page=2', 'created_from=2020-01-01T00:00:00Z', byLastOrdering]) {
        const parsed = parseListQuery(resource, raw);
        const query = resource.parent ? await scopeToParent(recorded, resource, tenant.org.id, PARENT_UID, parsed) : parsed;
        await listRecords(recorded, resource, tenant.org.id, query, cache);
        await listRecords(recorded, resource, tenant.org.id, query, undefined);
      }
      if (!resource.parent) await retrieveRecord(recorded, resource, tenant.org.id, `${resource.path}_1`);
    }
    await applyLedgerEntry(recorded, tenant.org.id, { kind: 'drawdown', id: 'dd_1', limit: 'cl_1', amount: '10.00' });
    await applyLedgerEntry(recorded, tenant.org.id, { kind: 'drawdown', id: 'dd_1', limit: 'cl_1', amount: '10.00' });
    await applyLedgerEntry(recorded, tenant.org.id, { kind: 'drawdown', id: 'dd_2', limit: 'cl_1', amount: '1000.00' }).catch(() => {});
    await applyLedgerEntry(recorded, tenant.org.id, { kind: 'repayment', id: 'rp_1', limit: 'cl_1', amount: '5.00' });

    const dataStatements = statements.filter((sql) => !/^(SET|BEGIN|COMMIT|ROLLBACK)\b/i.test(sql));
    expect(dataStatements.length).toBeGreaterThan(20);
    // A read or change names its organization (org_id = $n); an insert carries it as a column value.
    const scoped = (sql: string) => /\borg_id = \$\d+/.test(sql) || /^INSERT INTO \w+ \([^)]*\borg_id\b[^)]*\) VALUES/.test(sql);
    const unscoped = [...new Set(dataStatements.filter((sql) => !scoped(sql)))];
    expect(unscoped).toEqual([]);
  });
});
