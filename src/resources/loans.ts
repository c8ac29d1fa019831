import type { ResourceDefinition } from '../listing/resource-definition.js';
import { currencyValue, enumValue, identifierValue } from '../listing/value-parsers.js';
import { MAX_REFERENCE_LENGTH } from '../ledger/write-limits.js';
import { createdAtField, CURRENCY_BOUNDS, entityField, entityFilter, timeRangeFilters, uidField, updatedAtField, UID_BOUNDS } from './common-fields.js';
import { creditLimits } from './credit-limits.js';
import { paymentMethods } from './payment-methods.js';

export const LOAN_STATUSES = ['active', 'repaid'] as const;

/**
 * Money lent on a credit limit, paid out to a payment method of the same
 * entity and currency: `POST /api/loans/` creates it with the drawdown of
 * its principal, `POST /api/loans/{uid}/repayments/` repays it
 * (src/http/loan-write-routes.ts); listed and retrieved like every collection.
 */
export const loans: ResourceDefinition = {
  path: 'loans',
  // `repaid` instead of `updated` for the repayment that brings a loan to zero.
  events: { object: 'loan', types: ['created', 'updated', 'repaid'] },
  name: 'loan',
  schemaName: 'Loan',
  description:
    "Money lent to an entity on one of its credit limits and paid out to one of its payment methods. outstanding is real time: principal − repayments, and the limit's outstanding moves with it.",
  table: 'loans',
  countedRows: true,
  fields: {
    uid: uidField('ln', 'ln_demo_01'),
    entity: { ...entityField, description: "UID of the borrowing entity (the credit limit's and the payment method's)." },
    credit_limit: { column: 'credit_limit', type: 'string', description: 'UID of the credit limit it draws on.', example: 'cl_demo_01_usd', ...UID_BOUNDS },
    payment_method: {
      column: 'payment_method',
      type: 'string',
      description: 'UID of the payment method the principal is paid out to (same entity, same currency).',
      example: 'pm_demo_001',
      ...UID_BOUNDS,
    },
    currency: { column: 'currency', type: 'string', description: "The limit's currency (ISO 4217).", example: 'USD', ...CURRENCY_BOUNDS },
    principal: { column: 'principal', type: 'decimal', description: 'Amount lent.', example: 5000 },
    outstanding: { column: 'outstanding', type: 'decimal', description: 'principal − repayments (real time).', example: 4000 },
    status: { column: 'status', type: 'string', description: 'active while outstanding > 0, then repaid.', example: 'active', enum: LOAN_STATUSES },
    reference: { column: 'reference', type: 'string', description: "The lender's own id for it; null when none was given.", example: 'loan-8812', nullable: true, maxLength: MAX_REFERENCE_LENGTH },
    created_at: createdAtField,
    updated_at: updatedAtField,
  },
  // Repayments change these without moving the table's version (migration 014).
  volatileFields: ['outstanding', 'status', 'updated_at'],
  filters: [
    ...timeRangeFilters,
    entityFilter,
    { param: 'currency', field: 'currency', operator: '=', value: currencyValue, description: 'ISO 4217 code, any letter case.' },
    { param: 'status', field: 'status', operator: '=', value: enumValue(LOAN_STATUSES), description: 'active or repaid (any letter case).' },
    { param: 'credit_limit', field: 'credit_limit', operator: '=', value: identifierValue, description: 'Exact credit limit UID.' },
  ],
  orderings: ['created_at', 'updated_at', 'principal', 'outstanding'],
  defaultOrdering: '-created_at',
  importLine: {
    object: 'loan',
    uidPrefix: 'ln',
    fields: {
      credit_limit: { kind: 'identifier', references: creditLimits },
      payment_method: { kind: 'identifier', references: paymentMethods },
      principal: { kind: 'decimal', precision: 15, scale: 2, allowZero: false },
      // What was repaid before the book moved here (default 0): outstanding is principal − repaid.
      repaid: { kind: 'decimal', precision: 15, scale: 2, allowZero: true, optional: true },
      reference: { kind: 'text', maxLength: 255, optional: true },
    },
    refused: {
      entity: "entity cannot be imported: a loan's entity is its credit limit's",
      currency: "currency cannot be imported: a loan's currency is its credit limit's",
      outstanding: 'outstanding cannot be imported: give repaid (outstanding = principal − repaid)',
      status: 'status cannot be imported: a loan is active while outstanding > 0, then repaid',
    },
    ledger: 'loan',
  },
};
