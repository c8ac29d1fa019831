import { randomUUID } from 'node:crypto';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import type { LedgerKind } from '../../src/ledger/ledger-entry.js';
import { beforeAll } from 'vitest';
import type { Queryable, Store } from '../../src/store/store.js';
import { creditLimit, insertCreditLimits } from './records.js';
import { createTenant, type Tenant } from './tenants.js';

export interface PostEntryOptions {
  readonly authorization: string;
  /** Defaults to a fresh UUID; `null` sends none. */
  readonly idempotencyKey?: string | null;
  readonly contentType?: string;
}

/** POSTs a drawdown or repayment through `inject`, with a JSON body (or the raw text given). */
export function postEntry(
  app: FastifyInstance,
  kind: LedgerKind,
  limitUid: string,
  body: unknown,
  options: PostEntryOptions,
): Promise<LightMyRequestResponse> {
  const idempotencyKey = options.idempotencyKey === undefined ? randomUUID() : options.idempotencyKey;
  return app.inject({
    method: 'POST',
    url: `/api/limits/${encodeURIComponent(limitUid)}/${kind}s/`,
    headers: {
      authorization: options.authorization,
      'content-type': options.contentType ?? 'application/json',
      ...(idempotencyKey === null ? {} : { 'idempotency-key': idempotencyKey }),
    },
    payload: typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body),
  });
}

/** The limit's stored outstanding amount and its number of ledger entries. */
export async function ledgerState(db: Queryable, orgId: string, limitUid: string): Promise<{ outstanding: string; entries: number }> {
  const [row] = await db.query<{ outstanding: string; entries: string }>(
    `SELECT l.outstanding::text AS outstanding,
            (SELECT count(*) FROM ledger_entries e WHERE e.org_id = l.org_id AND e.limit_id = l.id)::text AS entries
       FROM credit_limits l WHERE l.org_id = $1 AND l.uid = $2`,
    [orgId, limitUid],
  );
  if (!row) throw new Error(`no limit ${limitUid}`);
  return { outstanding: row.outstanding, entries: Number(row.entries) };
}

/** A suite's organization with a write-scoped key, and fresh credit limits of its own. */
export function useWriter(store: () => Store): { writer: () => Tenant; newLimit: (capacity?: string, outstanding?: string) => Promise<string> } {
  let writer: Tenant | undefined;
  beforeAll(async () => {
    writer = await createTenant(store(), 'Writer', 'write');
  });
  const current = (): Tenant => {
    if (!writer) throw new Error('useWriter: the writer is created in beforeAll');
    return writer;
  };
  return {
    writer: current,
    async newLimit(capacity = '1000.00', outstanding = '0.00') {
      const limit = creditLimit({ capacity, outstanding });
      await insertCreditLimits(store(), current().org.id, [limit]);
      return limit.uid;
    },
  };
}
