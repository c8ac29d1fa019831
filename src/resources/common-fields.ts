import type { FieldDefinition, FilterDefinition } from '../listing/resource-definition.js';
import { MAX_UID_LENGTH } from '../domain/record-uid.js';
import { identifierValue, timestampFrom, timestampTo } from '../listing/value-parsers.js';

/**
 * Fields and filters every collection shares: uid, entity and the two
 * timestamps. The uid's example is a record of the demo data, since /docs
 * pre-fills it in "Try it out" and it should be found there.
 */
export function uidField(prefix: string, example = `${prefix}_1`): FieldDefinition {
  return { column: 'uid', type: 'string', description: 'Stable public identifier.', example, maxLength: MAX_UID_LENGTH };
}

/** Bounds of a column holding a record's uid (the tables' CHECK: 1–255 characters). */
export const UID_BOUNDS = { maxLength: MAX_UID_LENGTH } as const;
/** Bounds of a currency column (the tables' CHECK: three upper-case letters). */
export const CURRENCY_BOUNDS = { maxLength: 3, pattern: '^[A-Z]{3}$' } as const;

export const entityField: FieldDefinition = {
  column: 'entity',
  type: 'string',
  description: 'UID of the entity (borrower) it belongs to.',
  example: 'ent_1',
  ...UID_BOUNDS,
};

export const createdAtField: FieldDefinition = {
  column: 'created_at',
  type: 'timestamp',
  description: 'When the record was created: RFC 3339, UTC, always six fractional digits.',
  example: '2024-05-01T10:00:00.123456Z',
};

export const updatedAtField: FieldDefinition = {
  column: 'updated_at',
  type: 'timestamp',
  description: 'When the record last changed: RFC 3339, UTC, always six fractional digits.',
  example: '2024-05-02T08:00:00.000000Z',
};

export const timeRangeFilters: readonly FilterDefinition[] = [
  { param: 'created_from', field: 'created_at', operator: '>=', value: timestampFrom, description: 'Created on or after this time.' },
  { param: 'created_to', field: 'created_at', operator: '<=', value: timestampTo, description: 'Created on or before this time.' },
  { param: 'updated_from', field: 'updated_at', operator: '>=', value: timestampFrom, description: 'Updated on or after this time.' },
  { param: 'updated_to', field: 'updated_at', operator: '<=', value: timestampTo, description: 'Updated on or before this time.' },
];

export const entityFilter: FilterDefinition = {
  param: 'entity',
  field: 'entity',
  operator: '=',
  value: identifierValue,
  description: 'Exact entity UID.',
};
