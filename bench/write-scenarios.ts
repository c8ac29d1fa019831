/**
 * The write scenarios: drawdowns over HTTP (`POST /api/limits/{uid}/drawdowns/`),
 * each request with a fresh Idempotency-Key. They write to an organization of
 * their own, `bench_writes`, beside the dataset's 100: its credit limits are
 * created once (through the import path) with a capacity no run can spend, so
 * no request is refused for want of balance and the read scenarios, which
 * read `bench_org_000`, see none of it. What a run leaves behind: one ledger
 * entry and one stored idempotency response per drawdown answered, and higher
 * `outstanding` on `bench_writes`' limits — nothing of the dataset's own
 * organizations changes.
 */
import { Readable } from 'node:stream';
import { createOrganization, findOrganization } from '../src/organizations/organizations.js';
import { importJsonl } from '../src/import/index.js';
import type { Store } from '../src/store/store.js';
import { mulberry32, type DatasetSpec } from './dataset.js';

export const WRITES_ORG_UID = 'bench_writes';
/** Limits the spread scenario draws on: enough that two of 32 connections rarely meet on one row. */
export const SPREAD_LIMITS = 1000;
export const HOT_LIMIT_UID = 'cl_bench_hot';
/** 10^12: a run of 10,000 drawdowns/s for a day spends less than a millionth of it. */
const CAPACITY = '1000000000000.00';
export const DRAWDOWN_BODY = '{"amount":"1.00"}';

export interface WriteScenario {
  readonly id: string;
  readonly title: string;
  /** Path of the next request; called once per request (wrk: 20,000 times, then cycled). */
  nextPath(): string;
  /** The body of every request; DRAWDOWN_BODY when absent. */
  readonly postBody?: string;
}

/** The hot limit's payment method: loan creations (l1) pay out to it. */
export const HOT_METHOD_UID = 'pm_bench_hot';
/** A loan of 1.00 on the hot limit: the same money as a w2 drawdown, through POST /api/loans/. */
export const LOAN_BODY = JSON.stringify({ credit_limit: HOT_LIMIT_UID, payment_method: HOT_METHOD_UID, principal: '1.00' });

export function writeScenarios(spec: DatasetSpec): WriteScenario[] {
  const random = mulberry32(spec.seed ^ 0x3717e5);
  return [
    {
      id: 'w1',
      title: `drawdowns spread over ${SPREAD_LIMITS.toLocaleString('en-US')} limits`,
      nextPath: () => `/api/limits/${spreadLimitUid(Math.floor(random() * SPREAD_LIMITS))}/drawdowns/`,
    },
    { id: 'w2', title: 'drawdowns on one hot limit', nextPath: () => `/api/limits/${HOT_LIMIT_UID}/drawdowns/` },
    // Beside w2: each request creates a loan (a row of loans) and draws its principal on the same hot limit.
    { id: 'l1', title: 'loan creations on one hot limit', nextPath: () => '/api/loans/', postBody: LOAN_BODY },
  ];
}

function spreadLimitUid(k: number): string {
  return `cl_bench_w_${k}`;
}

/** Creates `bench_writes` and its limits unless they exist (a second run reuses them, drawn a little further). */
export async function ensureWriteLimits(store: Store): Promise<void> {
  if (await findOrganization(store, WRITES_ORG_UID)) return ensureLoanMethod(store);
  await createOrganization(store, 'Bench writes', WRITES_ORG_UID);
  const entity = (uid: string) => `${JSON.stringify({ object: 'entity', uid, name: `Borrower ${uid}`, country: 'US' })}\n`;
  const limit = (uid: string, entityUid: string) =>
    `${JSON.stringify({ object: 'credit_limit', uid, entity: entityUid, currency: 'USD', capacity: CAPACITY, rate: '0.0005' })}\n`;
  const lines = [entity('ent_bench_w_hot'), limit(HOT_LIMIT_UID, 'ent_bench_w_hot')];
  for (let k = 0; k < SPREAD_LIMITS; k++) lines.push(entity(`ent_bench_w_${k}`), limit(spreadLimitUid(k), `ent_bench_w_${k}`));
  await importJsonl(store, WRITES_ORG_UID, Readable.from(lines));
  await ensureLoanMethod(store);
}

/** The hot limit's payment method (upserted by the import: also on a dataset made before loans existed). */
async function ensureLoanMethod(store: Store): Promise<void> {
  const method = { object: 'payment_method', uid: HOT_METHOD_UID, entity: 'ent_bench_w_hot', type: 'ACH', currency: 'USD', last_2: '00' };
  await importJsonl(store, WRITES_ORG_UID, Readable.from([`${JSON.stringify(method)}\n`]));
}
