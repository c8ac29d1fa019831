import { expect, it } from 'vitest';
import { LineFields } from '../../src/import/line-fields.js';
import { recordKindsOf } from '../../src/import/record-kinds.js';
import { createStagingTableSql, stagingCopyTarget, toCopyRow } from '../../src/import/staging.js';
import type { ResourceDefinition } from '../../src/listing/resource-definition.js';
import { enumValue } from '../../src/listing/value-parsers.js';
import { entities } from '../../src/resources/entities.js';
import { RESOURCES } from '../../src/resources/index.js';
import { describeEachStore } from '../helpers/stores.js';

/** A collection as a contributor might add it, with fields named like the ledger's. */
const fees: ResourceDefinition = {
  ...entities,
  path: 'fees',
  table: 'fees',
  importLine: {
    object: 'fee',
    uidPrefix: 'fee',
    fields: { amount: { kind: 'decimal', precision: 15, scale: 2, allowZero: false }, at: { kind: 'text', maxLength: 20 }, limit_uid: { kind: 'identifier' } },
  },
};

describeEachStore('the import stages a collection whose fields are named like the ledger columns', (store) => {
  it('creates the staging table and COPYs a line of it (no "column amount specified more than once")', async () => {
    const kinds = recordKindsOf([...RESOURCES, fees]);
    const fee = kinds.byObject('fee');
    if (!fee) throw new Error('fees is importable');
    await store().transaction(async (tx) => {
      await tx.exec(createStagingTableSql(kinds));
      const row = toCopyRow(1, { line: 'record', kind: fee, uid: 'fee_1', values: ['12.50', 'noon', 'cl_1'], created_at: undefined, updated_at: undefined });
      await tx.copyFrom(stagingCopyTarget(kinds), (async function* () {
        yield new TextEncoder().encode(row);
      })());
      const [staged] = await tx.query<{ amount: string; at: string; limit_uid: string }>('SELECT amount::text AS amount, at, limit_uid FROM import_stage');
      expect(staged).toEqual({ amount: '12.50', at: 'noon', limit_uid: 'cl_1' });
    });
  });
});

it("refuses a field named like one of the import's own columns, naming it", () => {
  for (const column of ['line', 'object', 'ledger_amount', 'merge_changed']) {
    const clash: ResourceDefinition = { ...fees, importLine: { object: 'fee', uidPrefix: 'fee', fields: { [column]: { kind: 'identifier' } } } };
    expect(() => recordKindsOf([clash])).toThrow(new RegExp(`import field fees\\.${column} is named like a column of the import's own`));
  }
});

it('reads an enum import field in any letter case as the definition spells it, lower case included', () => {
  const lower = new LineFields({ status: 'ACTIVE' });
  expect(lower.oneOf('status', ['active', 'repaid'])).toBe('active');
  const upper = new LineFields({ type: 'ach' });
  expect(upper.oneOf('type', ['ACH', 'WIRE'])).toBe('ACH');
  const wrong = new LineFields({ status: 'open' });
  expect(wrong.oneOf('status', ['active', 'repaid'])).toBeUndefined();
  expect(wrong.problems).toEqual(["status must be one of active, repaid, got 'open'"]);
});

it('parses an enum filter value in any letter case into the stored spelling', () => {
  const status = enumValue(['active', 'repaid']);
  expect(status.parse('REPAID')).toEqual({ ok: true, value: 'repaid' });
  expect(status.parse('open')).toEqual({ ok: false, reason: 'must be one of active, repaid' });
});
