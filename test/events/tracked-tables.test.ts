import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { schemaProblems } from '../../src/listing/schema-check.js';
import type { ResourceDefinition } from '../../src/listing/resource-definition.js';
import { RESOURCES } from '../../src/resources/index.js';
import { creditLimits } from '../../src/resources/credit-limits.js';
import type { Store } from '../../src/store/store.js';
import { testStoreVariants } from '../helpers/stores.js';

/** The collections whose records change: those whose definitions declare events (the events log and the webhook endpoints are not themselves the subject of events). */
const DATA_TABLES = RESOURCES.filter((resource) => resource.events).map((resource) => resource.table);

describe.each(testStoreVariants())('the tables that record events ($kind)', (variant) => {
  let store: Store;
  beforeAll(async () => {
    store = await variant.open();
  });
  afterAll(() => store.close());

  it('every collection of records has both event triggers, recording the columns its definition renders', async () => {
    const tracked = await store.query<{ table: string; functions: string[] }>(
      `SELECT c.relname::text AS table, array_agg(p.proname::text ORDER BY p.proname) AS functions
         FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_proc p ON p.oid = t.tgfoid
        WHERE NOT t.tgisinternal AND p.proname IN ('events_record_inserted', 'events_record_updated')
          AND c.relnamespace = current_schema()::regnamespace
        GROUP BY c.relname ORDER BY c.relname`,
    );
    expect(DATA_TABLES).toEqual(expect.arrayContaining(['payment_methods', 'entities', 'credit_limits', 'loans', 'ledger_entries']));
    expect(tracked.map((row) => row.table)).toEqual([...DATA_TABLES].sort());
    for (const row of tracked) expect(row.functions).toEqual(['events_record_inserted', 'events_record_updated']);
    const dataResources = RESOURCES.filter((resource) => DATA_TABLES.includes(resource.table));
    expect(dataResources.map((resource) => resource.table).sort()).toEqual([...DATA_TABLES].sort());
    for (const resource of dataResources) expect(await schemaProblems(store, resource)).toEqual([]);
  });

  it('the schema check names a table that records events its definition does not declare, or declares as another object', async () => {
    const { events: _events, ...undeclared } = creditLimits;
    expect(await schemaProblems(store, undeclared)).toEqual([expect.stringContaining('records events (events_track) but the definition declares no `events`')]);
    expect(await schemaProblems(store, { ...creditLimits, events: { object: 'limit' } })).toEqual([
      expect.stringContaining('records them as credit_limit events, the definition declares limit'),
      expect.stringContaining('records them as credit_limit events, the definition declares limit'),
    ]);
  });

  it('the schema check names a column the triggers record that the definition does not render, and one it renders that they do not', async () => {
    const { rate: _rate, ...withoutRate } = creditLimits.fields;
    const fewer: ResourceDefinition = { ...creditLimits, fields: withoutRate, orderings: creditLimits.orderings };
    expect((await schemaProblems(store, fewer)).filter((problem) => problem.includes('events'))).toEqual([
      expect.stringContaining('records column(s) rate that the definition does not render'),
      expect.stringContaining('records column(s) rate that the definition does not render'),
    ]);
    const more: ResourceDefinition = {
      ...creditLimits,
      fields: { ...creditLimits.fields, org: { column: 'org_id', type: 'string', description: 'x', example: '1' } },
    };
    expect((await schemaProblems(store, more)).filter((problem) => problem.includes('does not record'))).toHaveLength(2);
  });
});
