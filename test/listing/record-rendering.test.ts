import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { serializeRecord, type ApiRecord } from '../../src/listing/record-rendering.js';
import type { ResourceDefinition } from '../../src/listing/resource-definition.js';
import { RESOURCES } from '../../src/resources/index.js';

/** The model: each field in definition order, decimals as numbers, a missing value as '' (null when the field is nullable). */
function modelRecord(resource: ResourceDefinition, row: Record<string, string | null>): ApiRecord {
  const record: ApiRecord = {};
  for (const [name, field] of Object.entries(resource.fields)) {
    const value = row[name] ?? '';
    record[name] = field.nullable && row[name] === null ? null : field.type === 'decimal' ? Number(value) : value;
  }
  return record;
}

describe('serializeRecord', () => {
  for (const resource of RESOURCES) {
    const names = Object.keys(resource.fields);
    const decimal = fc.oneof(fc.constant(null), fc.integer({ min: -1e12, max: 1e12 }).map((cents) => (cents / 100).toFixed(2)));
    const text = fc.oneof(fc.constant(null), fc.string(), fc.constantFrom('"', '\\', '\u2028', '__proto__'));
    const row = fc.record(
      Object.fromEntries([
        ...names.map((name) => [name, resource.fields[name]?.type === 'decimal' ? decimal : text] as const),
        // Columns the list statements select beside the fields: never in the record.
        ['count', fc.constant('7')],
        ['_row_id', fc.constant('1')],
      ]),
    );

    it(`gives every ${resource.name} field, in definition order, as the model does`, () => {
      fc.assert(
        fc.property(row, (generated) => {
          const record = serializeRecord(resource, generated);
          expect(record).toStrictEqual(modelRecord(resource, generated));
          expect(Object.keys(record)).toEqual(names);
          expect(JSON.stringify(record)).toBe(JSON.stringify(modelRecord(resource, generated)));
        }),
      );
    });
  }

  it('prints decimals as JSON numbers and keeps text as given', () => {
    const limits = RESOURCES.find((resource) => resource.path === 'limits') as ResourceDefinition;
    const record = serializeRecord(limits, { uid: 'cl_"1"', capacity: '50000.00', outstanding: '0.10', balance: '49999.90' });
    expect(record.uid).toBe('cl_"1"');
    expect(JSON.stringify(record)).toContain('"capacity":50000,"outstanding":0.1,"balance":49999.9');
  });
});
