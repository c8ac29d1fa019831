import type { Queryable } from '../../src/store/store.js';

export interface PaymentMethodRow {
  uid: string;
  entity: string;
  type: string;
  currency: string;
  last_2: string;
  created_at: string;
  updated_at: string;
}

export interface CreditLimitRow {
  uid: string;
  entity: string;
  currency: string;
  capacity: string;
  outstanding: string;
  rate: string;
  created_at: string;
  updated_at: string;
}

/** Test seeding straight into the tables (the import path has its own tests). */
export async function insertPaymentMethods(db: Queryable, orgId: string, rows: readonly PaymentMethodRow[]): Promise<void> {
  for (let start = 0; start < rows.length; start += 1000) {
    const chunk = rows.slice(start, start + 1000);
    await db.query(
      `INSERT INTO payment_methods (org_id, uid, entity, type, currency, last_2, created_at, updated_at)
       SELECT $1, * FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::timestamptz[], $8::timestamptz[])`,
      [
        orgId,
        chunk.map((r) => r.uid),
        chunk.map((r) => r.entity),
        chunk.map((r) => r.type),
        chunk.map((r) => r.currency),
        chunk.map((r) => r.last_2),
        chunk.map((r) => r.created_at),
        chunk.map((r) => r.updated_at),
      ],
    );
  }
}

export async function insertCreditLimits(db: Queryable, orgId: string, rows: readonly CreditLimitRow[]): Promise<void> {
  for (let start = 0; start < rows.length; start += 1000) {
    const chunk = rows.slice(start, start + 1000);
    await db.query(
      `INSERT INTO credit_limits (org_id, uid, entity, currency, capacity, outstanding, rate, created_at, updated_at)
       SELECT $1, * FROM unnest($2::text[], $3::text[], $4::text[], $5::numeric[], $6::numeric[], $7::numeric[], $8::timestamptz[], $9::timestamptz[])`,
      [
        orgId,
        chunk.map((r) => r.uid),
        chunk.map((r) => r.entity),
        chunk.map((r) => r.currency),
        chunk.map((r) => r.capacity),
        chunk.map((r) => r.outstanding),
        chunk.map((r) => r.rate),
        chunk.map((r) => r.created_at),
        chunk.map((r) => r.updated_at),
      ],
    );
  }
}

let counter = 0;
export function paymentMethod(overrides: Partial<PaymentMethodRow> = {}): PaymentMethodRow {
  counter += 1;
  return {
    uid: `pm_${counter}`,
    entity: 'ent_1',
    type: 'ACH',
    currency: 'USD',
    last_2: '42',
    created_at: '2024-05-01T10:00:00.123456Z',
    updated_at: '2024-05-02T08:00:00.000000Z',
    ...overrides,
  };
}

export function creditLimit(overrides: Partial<CreditLimitRow> = {}): CreditLimitRow {
  counter += 1;
  return {
    uid: `cl_${counter}`,
    entity: 'ent_1',
    currency: 'USD',
    capacity: '50000.00',
    outstanding: '0.00',
    rate: '0.0005',
    created_at: '2024-05-01T10:00:00.123456Z',
    updated_at: '2024-05-02T08:00:00.000000Z',
    ...overrides,
  };
}
