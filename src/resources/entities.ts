import { Type } from '@sinclair/typebox';
import { isCountryCode } from '../domain/countries.js';
import type { ResourceDefinition, ValueParser } from '../listing/resource-definition.js';
import { createdAtField, timeRangeFilters, uidField, updatedAtField } from './common-fields.js';
import { asciiUpperCase } from '../domain/ascii-upper-case.js';

/** An ISO 3166-1 alpha-2 code in any letter case, normalized to upper case. */
export const countryValue: ValueParser = {
  schema: Type.String({ maxLength: 2, pattern: '^[A-Za-z]{2}$', description: 'ISO 3166-1 alpha-2 code, any letter case', examples: ['US'] }),
  parse(raw) {
    const code = asciiUpperCase(raw);
    if (!/^[A-Z]{2}$/.test(code)) return { ok: false, reason: 'must be a two-letter ISO 3166-1 country code' };
    if (!isCountryCode(code)) return { ok: false, reason: 'must be an assigned ISO 3166-1 alpha-2 country code' };
    return { ok: true, value: code };
  },
};

/** The longest entity name (the table's CHECK). */
const MAX_ENTITY_NAME_LENGTH = 200;

export const entities: ResourceDefinition = {
  path: 'entities',
  events: { object: 'entity' },
  name: 'entity',
  schemaName: 'Entity',
  description: 'A borrower: the entity that payment methods and credit limits belong to (their `entity` field is its uid).',
  table: 'entities',
  countedRows: true,
  fields: {
    uid: uidField('ent', 'ent_demo_01'),
    name: { column: 'name', type: 'string', description: 'Legal or trading name.', example: 'Acme Trading Ltd', maxLength: MAX_ENTITY_NAME_LENGTH },
    country: { column: 'country', type: 'string', description: 'Country of registration: ISO 3166-1 alpha-2, upper case.', example: 'GB', maxLength: 2, pattern: '^[A-Z]{2}$' },
    created_at: createdAtField,
    updated_at: updatedAtField,
  },
  filters: [
    ...timeRangeFilters,
    { param: 'country', field: 'country', operator: '=', value: countryValue, description: 'ISO 3166-1 alpha-2 code, any letter case.' },
  ],
  orderings: ['created_at', 'updated_at', 'name', 'country'],
  defaultOrdering: '-created_at',
  importLine: {
    object: 'entity',
    uidPrefix: 'ent',
    fields: { name: { kind: 'text', maxLength: MAX_ENTITY_NAME_LENGTH }, country: { kind: 'country' } },
  },
};
