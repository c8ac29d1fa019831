import { randomUUID } from 'node:crypto';
import type { ResourceDefinition } from '../listing/resource-definition.js';
import { serializeRecord } from '../listing/record-rendering.js';

/** The loan and credit-limit resources: answers show both as GET does. */
export interface LoanViews {
  readonly loans: ResourceDefinition;
  readonly limits: ResourceDefinition;
}

/** A loan write's own result: the JSON members of its 201. */
export type LoanResult = Readonly<Record<string, unknown>>;

export interface LoanCreation {
  readonly orgId: string;
  readonly keyId?: string | undefined;
  /** uid of the credit limit it draws on. */
  readonly creditLimit: string;
  /** uid of the payment method it is paid out to. */
  readonly paymentMethod: string;
  /** Canonical positive decimal. */
  readonly principal: string;
  readonly reference?: string | undefined;
}

export function newLoanUid(): string {
  return `ln_${randomUUID().replaceAll('-', '')}`;
}

/** A loan's answer from the values stored under its key (joinedLoans): the same bytes as the long way's 201. */
export function renderStoredLoan(views: LoanViews, stored: Record<string, unknown>): { body: string; value: LoanResult } {
  const row = stored as { loan: Record<string, string | null>; limit: Record<string, string | null> };
  const loan = serializeRecord(views.loans, row.loan);
  const limit = serializeRecord(views.limits, row.limit);
  return { body: JSON.stringify({ loan, limit }), value: { loan, limit } };
}
