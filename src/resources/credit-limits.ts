import type { ResourceDefinition } from '../listing/resource-definition.js';
import { createdAtField, CURRENCY_BOUNDS, entityField, entityFilter, timeRangeFilters, uidField, updatedAtField } from './common-fields.js';

export const creditLimits: ResourceDefinition = {
  path: 'limits',
  events: { object: 'credit_limit' },
  name: 'credit limit',
  schemaName: 'CreditLimit',
  description:
    "An entity's credit line in one currency. outstanding and balance are real time: every committed drawdown and repayment is reflected at once.",
  table: 'credit_limits',
  countedRows: true,
  fields: {
    uid: uidField('cl', 'cl_demo_01_usd'),
    entity: entityField,
    currency: { column: 'currency', type: 'string', description: "The limit's currency (ISO 4217).", example: 'USD', ...CURRENCY_BOUNDS },
    capacity: { column: 'capacity', type: 'decimal', description: 'The most the entity may borrow.', example: 50000 },
    outstanding: { column: 'outstanding', type: 'decimal', description: 'Amount currently drawn.', example: 1000 },
    balance: { column: 'balance', type: 'decimal', description: 'Credit still available: capacity − outstanding.', example: 49000 },
    rate: { column: 'rate', type: 'decimal', description: 'Daily interest rate.', example: 0.0005 },
    created_at: createdAtField,
    updated_at: updatedAtField,
  },
  // Drawdowns and repayments change these without moving the table's version.
  volatileFields: ['outstanding', 'balance', 'updated_at'],
  filters: [...timeRangeFilters, entityFilter],
  orderings: ['created_at', 'updated_at', 'capacity', 'outstanding', 'balance', 'entity'],
  defaultOrdering: '-created_at',
  importLine: {
    object: 'credit_limit',
    uidPrefix: 'cl',
    fields: {
      entity: { kind: 'identifier' },
      currency: { kind: 'currency' },
      // A capacity of zero is a frozen line.
      capacity: { kind: 'decimal', precision: 15, scale: 2, allowZero: true },
      rate: { kind: 'decimal', precision: 10, scale: 8, allowZero: true },
    },
    refused: {
      outstanding: 'outstanding cannot be imported: it changes only through drawdown and repayment lines',
      balance: 'balance cannot be imported: it is capacity − outstanding, and outstanding changes only through drawdown and repayment lines',
    },
  },
};
