import { expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import type { ResourceDefinition } from '../../src/listing/resource-definition.js';
import { assertSchemaMatches, schemaProblems } from '../../src/listing/schema-check.js';
import { creditLimits } from '../../src/resources/credit-limits.js';
import { entities } from '../../src/resources/entities.js';
import { ledgerEntries } from '../../src/resources/ledger-entries.js';
import { RESOURCES } from '../../src/resources/index.js';
import { startServer } from '../../src/server.js';
import { describeEachStore } from '../helpers/stores.js';

/** A scratch table's definition, copied from one whose table records events: the scratch table records none. */
function withoutEvents(resource: ResourceDefinition): ResourceDefinition {
  const { events: _events, ...rest } = resource;
  return rest;
}

describeEachStore('resource definitions against the schema', (store) => {
  it('finds nothing missing for the shipped definitions on the migrated schema', async () => {
    await expect(assertSchemaMatches(store(), RESOURCES)).resolves.toBeUndefined();
  });

  it('names the collection, the field and the missing column, or the type it cannot read', async () => {
    const broken: ResourceDefinition = {
      ...entities,
      fields: {
        ...entities.fields,
        name: { ...entities.fields.name!, type: 'decimal' },
        nickname: { column: 'nickname', type: 'string', description: 'x', example: 'x' },
      },
    };
    expect(await schemaProblems(store(), broken)).toEqual([
      'collection /api/entities/ (table entities): field name: column name is text, which a decimal field cannot read',
      'collection /api/entities/ (table entities): field nickname: column nickname is missing',
    ]);
  });

  it('names every ordering and filter that no index leading with org_id serves', async () => {
    const broken: ResourceDefinition = {
      ...creditLimits,
      orderings: [...creditLimits.orderings, 'rate'],
      filters: [...creditLimits.filters, { ...creditLimits.filters[0]!, param: 'currency', field: 'currency' }],
    };
    expect(await schemaProblems(store(), broken)).toEqual([
      'collection /api/limits/ (table credit_limits): order_by rate: no B-tree index on (org_id, rate, …) serves it',
      'collection /api/limits/ (table credit_limits): filter currency: no B-tree index on (org_id, currency, …) serves it',
    ]);
  });

  it("checks a nested collection's indexes after its parent column, and that its row id is a unique bigint", async () => {
    const where = 'collection /api/limits/{uid}/entries/ (table ledger_entries)';
    expect(await schemaProblems(store(), { ...ledgerEntries, orderings: [...ledgerEntries.orderings, 'amount'] })).toEqual([
      `${where}: order_by amount: no B-tree index on (org_id, limit_id, amount, …) serves it`,
    ]);
    expect(await schemaProblems(store(), { ...ledgerEntries, rowId: 'id' })).toEqual([
      `${where}: row id column id is text; the engine breaks ties and finds page rows by a unique bigint`,
      `${where}: row id column id: no unique B-tree index leads with it (it must be unique, and page rows are found by it)`,
    ]);
    expect(await schemaProblems(store(), { ...ledgerEntries, rowId: 'limit_id' })).toEqual([
      `${where}: row id column limit_id: no unique B-tree index leads with it (it must be unique, and page rows are found by it)`,
    ]);
    expect(await schemaProblems(store(), { ...ledgerEntries, countedRows: true })).toContain(
      `${where}: countedRows: a nested collection's lists are one parent's, which the organization's row count does not give`,
    );
  });

  it('refuses countedRows on a table without the row-count triggers', async () => {
    await store().exec(`CREATE TABLE scratch_loans (id bigint PRIMARY KEY, org_id bigint NOT NULL, uid text, name text, country text,
                          created_at timestamptz, updated_at timestamptz);
                        CREATE INDEX ON scratch_loans (org_id, created_at, id); CREATE INDEX ON scratch_loans (org_id, updated_at, id);
                        CREATE INDEX ON scratch_loans (org_id, name, id); CREATE INDEX ON scratch_loans (org_id, country, id);`);
    const problems = await schemaProblems(store(), { ...withoutEvents(entities), path: 'loans', table: 'scratch_loans' });
    expect(problems).toHaveLength(4);
    expect(problems[0]).toBe(
      "collection /api/loans/ (table scratch_loans): countedRows: no INSERT trigger running row_counts_add_inserted() (install them with SELECT row_counts_track('scratch_loans', …))",
    );
    expect(await schemaProblems(store(), { ...withoutEvents(entities), path: 'loans', table: 'scratch_loans', countedRows: false })).toEqual([]);
  });

  it('refuses volatileFields that disagree with the columns the version trigger leaves out', async () => {
    expect(await schemaProblems(store(), { ...creditLimits, volatileFields: ['outstanding', 'balance'] })).toEqual([
      'collection /api/limits/ (table credit_limits): volatileFields: field updated_at is missing (the version trigger leaves column updated_at out)',
    ]);
    expect(await schemaProblems(store(), { ...entities, volatileFields: ['name'] })).toEqual([
      'collection /api/entities/ (table entities): volatileFields: column name moves the table version; its trigger does not list it',
    ]);
  });

  it('names a version comparison generated before a column was added, which a change to that column would not move, and the call that fixes it', async () => {
    await store().exec(`CREATE TABLE scratch_accounts (id bigint PRIMARY KEY, org_id bigint NOT NULL, uid text, name text, country text,
                          created_at timestamptz, updated_at timestamptz);
                        CREATE INDEX ON scratch_accounts (org_id, created_at, id); CREATE INDEX ON scratch_accounts (org_id, updated_at, id);
                        CREATE INDEX ON scratch_accounts (org_id, name, id); CREATE INDEX ON scratch_accounts (org_id, country, id);
                        SELECT row_counts_track('scratch_accounts', '{updated_at}');`);
    const accounts: ResourceDefinition = { ...withoutEvents(entities), path: 'accounts', table: 'scratch_accounts', volatileFields: ['updated_at'] };
    expect(await schemaProblems(store(), accounts)).toEqual([]);
    await store().exec('ALTER TABLE scratch_accounts ADD COLUMN nickname text');
    expect(await schemaProblems(store(), accounts)).toEqual([
      "collection /api/accounts/ (table scratch_accounts): scratch_accounts_bump_changed() compares the columns the table had when it was generated, not the ones it has now, so a change to a newer column would not move the table version (install it again: SELECT row_counts_version_trigger('scratch_accounts', '{updated_at}'))",
    ]);
    await store().exec(`SELECT row_counts_version_trigger('scratch_accounts', '{updated_at}')`);
    expect(await schemaProblems(store(), accounts)).toEqual([]);
  });

  it('stops serve with the message when the schema lacks what a definition needs', async () => {
    await store().exec('ALTER TABLE entities DISABLE TRIGGER entities_count_inserts');
    try {
      const config = loadConfig({ DATABASE_URL: 'pglite://memory', LOG_LEVEL: 'silent', PORT: '0' });
      await expect(startServer(config, store())).rejects.toThrow(
        /collection \/api\/entities\/ \(table entities\): countedRows: no INSERT trigger running row_counts_add_inserted\(\)/,
      );
    } finally {
      await store().exec('ALTER TABLE entities ENABLE TRIGGER entities_count_inserts');
    }
  });
});
