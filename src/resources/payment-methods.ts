import type { ResourceDefinition } from '../listing/resource-definition.js';
import { currencyValue } from '../listing/value-parsers.js';
import { createdAtField, CURRENCY_BOUNDS, entityField, entityFilter, timeRangeFilters, uidField, updatedAtField } from './common-fields.js';

export const PAYMENT_METHOD_TYPES = ['ACH', 'SEPA', 'BACS', 'WIRE', 'CARD'] as const;

export const paymentMethods: ResourceDefinition = {
  path: 'methods',
  events: { object: 'payment_method' },
  name: 'payment method',
  schemaName: 'PaymentMethod',
  description: 'A way to pay out to or collect from an entity, in one currency. Only the last two digits of the account number are kept.',
  table: 'payment_methods',
  countedRows: true,
  fields: {
    uid: uidField('pm', 'pm_demo_001'),
    entity: entityField,
    type: { column: 'type', type: 'string', description: 'Payment rail.', example: 'ACH', enum: PAYMENT_METHOD_TYPES },
    currency: { column: 'currency', type: 'string', description: 'ISO 4217 code, upper case.', example: 'USD', ...CURRENCY_BOUNDS },
    last_2: { column: 'last_2', type: 'string', description: 'Last two digits of the account number.', example: '89', maxLength: 2, pattern: '^[0-9]{2}$' },
    created_at: createdAtField,
    updated_at: updatedAtField,
  },
  filters: [
    ...timeRangeFilters,
    entityFilter,
    { param: 'currency', field: 'currency', operator: '=', value: currencyValue, description: 'ISO 4217 code, any letter case.' },
  ],
  orderings: ['created_at', 'updated_at', 'currency', 'type', 'entity'],
  defaultOrdering: '-created_at',
  importLine: {
    object: 'payment_method',
    uidPrefix: 'pm',
    fields: {
      entity: { kind: 'identifier' },
      type: { kind: 'enum', values: PAYMENT_METHOD_TYPES },
      currency: { kind: 'currency' },
      // The full account number is write-only: only its last two digits are kept.
      last_2: { kind: 'last-two-digits', source: 'account_number' },
    },
  },
};
