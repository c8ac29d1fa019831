import { describe, expect, it } from 'vitest';
import { buildApp } from '../helpers/app.js';
import { applyLedgerEntry, LedgerError } from '../../src/ledger/index.js';
import { anotherProcessLedger, ledgerOf } from '../helpers/ledger.js';
import { PostgresStore } from '../../src/store/postgres-store.js';
import type { Store } from '../../src/store/store.js';
import { databaseNow, dumpAllTables, importLines, SAMPLE_LINES } from '../helpers/import-lines.js';
import { describeEachStore } from '../helpers/stores.js';
import { createTenant, type Tenant } from '../helpers/tenants.js';

const CONCURRENT_ENTRIES = 120;

async function limitFromApi(store: Store, tenant: Tenant, query = '') {
  const app = await buildApp({ store });
  const response = await app.inject({ method: 'GET', url: `/api/limits/${query}`, headers: { authorization: tenant.authorization } });
  await app.close();
  return response.json() as { count: number; items: Record<string, unknown>[] };
}

/** A tenant with cl_1: capacity 50000.00, outstanding 1000.00. */
async function tenantWithLimit(store: Store): Promise<Tenant> {
  const tenant = await createTenant(store);
  await importLines(store, tenant.org.uid, SAMPLE_LINES);
  return tenant;
}

describeEachStore('applyLedgerEntry', (store, kind) => {
  describe('real-time utilization', () => {
    it('shows a drawdown at once in GET /api/limits/: outstanding, balance, updated_at, and updated_from finds it', async () => {
      const tenant = await tenantWithLimit(store());
      const result = await applyLedgerEntry(ledgerOf(store()), tenant.org.id, { kind: 'drawdown', id: 'dd_rt', limit: 'cl_1', amount: '2500.50' });

      const all = await limitFromApi(store(), tenant);
      expect(all.items[0]).toMatchObject({ uid: 'cl_1', outstanding: 3500.5, balance: 46499.5, updated_at: result.updated_at });
      const synced = await limitFromApi(store(), tenant, `?updated_from=${encodeURIComponent(result.updated_at)}`);
      expect(synced.count).toBe(1);
      expect(synced.items[0]).toMatchObject({ uid: 'cl_1', outstanding: 3500.5 });
    });

    it('lowers outstanding on a backdated repayment, keeps the entry\'s time, and stamps the limit with the time of the write (regression: updated_at moved back to 2020)', async () => {
      const tenant = await tenantWithLimit(store());
      const before = await databaseNow(store());
      const result = await applyLedgerEntry(ledgerOf(store()), tenant.org.id, {
        kind: 'repayment',
        id: 'rp_x',
        limit: 'cl_1',
        amount: '1000.00',
        at: '2020-01-01T00:00:00.000001Z',
      });
      expect(result).toMatchObject({ applied: true, at: '2020-01-01T00:00:00.000001Z', outstanding: '0.00', balance: '50000.00' });
      expect(result.updated_at >= before).toBe(true);
      const synced = await limitFromApi(store(), tenant, `?updated_from=${encodeURIComponent(before)}`);
      expect(synced.items).toMatchObject([{ uid: 'cl_1', outstanding: 0, updated_at: result.updated_at }]);
    });

    it('never moves updated_at backwards when the stored one is later than now: a change moves it a microsecond on', async () => {
      const tenant = await createTenant(store());
      await importLines(store(), tenant.org.uid, [{ ...SAMPLE_LINES[1], updated_at: '2099-01-01T00:00:00Z' }]);
      const result = await applyLedgerEntry(ledgerOf(store()), tenant.org.id, { kind: 'drawdown', id: 'dd_x', limit: 'cl_1', amount: '1.00' });
      expect(result).toMatchObject({ outstanding: '1.00', updated_at: '2099-01-01T00:00:00.000001Z' });
    });

    it('refuses an entry dated in the future and changes nothing', async () => {
      const tenant = await tenantWithLimit(store());
      const before = await dumpAllTables(store());
      const error = await applyLedgerEntry(ledgerOf(store()), tenant.org.id, { kind: 'drawdown', id: 'dd_f', limit: 'cl_1', amount: '1.00', at: '2099-01-01T00:00:00.000000Z' }).catch(
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(LedgerError);
      expect(error).toMatchObject({ code: 'invalid_entry', message: expect.stringMatching(/2099-01-01T00:00:00.000000Z is in the future/) });
      expect(await dumpAllTables(store())).toBe(before);
    });

    it('allows drawing exactly the balance', async () => {
      const tenant = await tenantWithLimit(store());
      const result = await applyLedgerEntry(ledgerOf(store()), tenant.org.id, { kind: 'drawdown', id: 'all', limit: 'cl_1', amount: '49000.00' });
      expect(result).toMatchObject({ outstanding: '50000.00', balance: '0.00' });
    });
  });

  describe('refusals change nothing', () => {
    const refusals: [string, { kind: 'drawdown' | 'repayment'; limit: string; amount: string }, string, RegExp][] = [
      ['a drawdown above the balance', { kind: 'drawdown', limit: 'cl_1', amount: '49000.01' }, 'insufficient_balance', /drawdown of 49000.01 refused: it exceeds the balance of cl_1 \(balance 49000.00/],
      ['a repayment above outstanding', { kind: 'repayment', limit: 'cl_1', amount: '1000.01' }, 'repayment_exceeds_outstanding', /repayment of 1000.01 refused: it exceeds the outstanding amount of cl_1 \(outstanding 1000.00\)/],
      ['an unknown limit', { kind: 'drawdown', limit: 'cl_nope', amount: '1.00' }, 'limit_not_found', /no credit limit 'cl_nope'/],
    ];
    for (const [name, entry, code, message] of refusals) {
      it(`refuses ${name}`, async () => {
        const tenant = await tenantWithLimit(store());
        const before = await dumpAllTables(store());
        const error = await applyLedgerEntry(ledgerOf(store()), tenant.org.id, { ...entry, id: 'refused' }).catch((e: unknown) => e);
        expect(error).toBeInstanceOf(LedgerError);
        expect((error as LedgerError).code).toBe(code);
        expect((error as LedgerError).message).toMatch(message);
        expect(await dumpAllTables(store())).toBe(before);
      });
    }

    it("never touches another organization's limit", async () => {
      const owner = await tenantWithLimit(store());
      const other = await createTenant(store());
      const error = await applyLedgerEntry(ledgerOf(store()), other.org.id, { kind: 'drawdown', id: 'x', limit: 'cl_1', amount: '1.00' }).catch((e: unknown) => e);
      expect((error as LedgerError).code).toBe('limit_not_found');
      expect((await limitFromApi(store(), owner)).items[0]).toMatchObject({ outstanding: 1000 });
    });
  });

  describe('idempotency by id', () => {
    it('treats the same id with the same content as a no-op', async () => {
      const tenant = await tenantWithLimit(store());
      const entry = { kind: 'drawdown', id: 'dd_same', limit: 'cl_1', amount: '10.00' } as const;
      const first = await applyLedgerEntry(ledgerOf(store()), tenant.org.id, entry);
      const before = await dumpAllTables(store());

      const second = await applyLedgerEntry(ledgerOf(store()), tenant.org.id, entry);

      expect(first.applied).toBe(true);
      expect(second).toMatchObject({ applied: false, outstanding: '1010.00', at: first.at });
      expect(await dumpAllTables(store())).toBe(before);
    });

    it('replays as a no-op even when the limit could no longer take it', async () => {
      const tenant = await tenantWithLimit(store());
      await applyLedgerEntry(ledgerOf(store()), tenant.org.id, { kind: 'drawdown', id: 'big', limit: 'cl_1', amount: '49000.00' });
      const again = await applyLedgerEntry(ledgerOf(store()), tenant.org.id, { kind: 'drawdown', id: 'big', limit: 'cl_1', amount: '49000.00' });
      expect(again).toMatchObject({ applied: false, outstanding: '50000.00' });
    });

    it('refuses the same id with different content', async () => {
      const tenant = await tenantWithLimit(store());
      await applyLedgerEntry(ledgerOf(store()), tenant.org.id, { kind: 'drawdown', id: 'dd_c', limit: 'cl_1', amount: '10.00' });
      const before = await dumpAllTables(store());
      for (const changed of [
        { kind: 'drawdown', amount: '11.00' },
        { kind: 'repayment', amount: '10.00' },
      ] as const) {
        const error = await applyLedgerEntry(ledgerOf(store()), tenant.org.id, { ...changed, id: 'dd_c', limit: 'cl_1' }).catch((e: unknown) => e);
        expect((error as LedgerError).code).toBe('id_conflict');
        expect((error as LedgerError).message).toMatch(/ledger entry 'dd_c' already exists with different content \(drawdown of 10.00 on cl_1/);
      }
      expect(await dumpAllTables(store())).toBe(before);
    });

    it('shares ids with import ledger lines', async () => {
      const tenant = await tenantWithLimit(store());
      const replay = await applyLedgerEntry(ledgerOf(store()), tenant.org.id, { kind: 'drawdown', id: 'dd_1', limit: 'cl_1', amount: '1200.00' });
      expect(replay.applied).toBe(false);
    });
  });

  // Concurrency needs several connections: PostgreSQL only (PGlite has one).
  if (kind === 'postgres') {
    describe('under concurrency', () => {
      it(`${CONCURRENT_ENTRIES} concurrent drawdowns and repayments on one limit: outstanding is the exact sum of the accepted ones, never above capacity`, async () => {
        const tenant = await createTenant(store());
        await importLines(store(), tenant.org.uid, [
          { object: 'credit_limit', uid: 'cl_hot', entity: 'e', currency: 'USD', capacity: '10000.00', rate: '0' },
        ]);
        const [{ schema } = { schema: '' }] = await store().query<{ schema: string }>('SELECT current_schema() AS schema');
        const pool = new PostgresStore(process.env.DATABASE_URL ?? '', { poolSize: 30, searchPath: schema, connectionTimeoutMs: 20_000 });
        try {
          // Mixed amounts (cents included) adding up to well over the capacity, so some must be refused.
          const entries = Array.from({ length: CONCURRENT_ENTRIES }, (_, i) => ({
            kind: i % 10 === 9 ? ('repayment' as const) : ('drawdown' as const),
            id: `c_${i}`,
            limit: 'cl_hot',
            amount: `${(i % 7) * 40 + 55}.${String((i * 37) % 100).padStart(2, '0')}`,
          }));
          const outcomes = await Promise.all(
            entries.map((entry) =>
              applyLedgerEntry(anotherProcessLedger(pool), tenant.org.id, entry).then(
                () => ({ entry, accepted: true }),
                (error: unknown) => {
                  if (!(error instanceof LedgerError)) throw error;
                  return { entry, accepted: false };
                },
              ),
            ),
          );

          const accepted = outcomes.filter((o) => o.accepted);
          const refusedDrawdowns = outcomes.filter((o) => !o.accepted && o.entry.kind === 'drawdown');
          expect(refusedDrawdowns.length).toBeGreaterThan(0);
          const cents = (amount: string) => BigInt(amount.replace('.', ''));
          const expected = accepted.reduce((sum, o) => sum + (o.entry.kind === 'drawdown' ? 1n : -1n) * cents(o.entry.amount), 0n);
          const [row] = await store().query<{ outstanding: string; capacity: string; ledger: string; entries: string }>(
            `SELECT l.outstanding::text AS outstanding, l.capacity::text AS capacity,
                    (SELECT coalesce(sum(CASE WHEN kind = 'drawdown' THEN amount ELSE -amount END), 0) FROM ledger_entries e WHERE e.org_id = l.org_id AND e.limit_id = l.id)::text AS ledger,
                    (SELECT count(*) FROM ledger_entries e WHERE e.org_id = l.org_id AND e.limit_id = l.id)::text AS entries
               FROM credit_limits l WHERE l.org_id = $1 AND l.uid = 'cl_hot'`,
            [tenant.org.id],
          );
          expect(cents(row?.outstanding ?? '')).toBe(expected);
          expect(cents(row?.ledger ?? '')).toBe(expected);
          expect(Number(row?.entries)).toBe(accepted.length);
          expect(expected).toBeLessThanOrEqual(cents(row?.capacity ?? ''));
          expect(expected).toBeGreaterThanOrEqual(0n);
        } finally {
          await pool.close();
        }
      });

      it('records one entry when the same id is sent concurrently', async () => {
        const tenant = await createTenant(store());
        await importLines(store(), tenant.org.uid, [{ object: 'credit_limit', uid: 'cl_dup', entity: 'e', currency: 'USD', capacity: '100.00', rate: '0' }]);
        const [{ schema } = { schema: '' }] = await store().query<{ schema: string }>('SELECT current_schema() AS schema');
        const pool = new PostgresStore(process.env.DATABASE_URL ?? '', { poolSize: 10, searchPath: schema });
        try {
          const results = await Promise.all(
            Array.from({ length: 10 }, () => applyLedgerEntry(anotherProcessLedger(pool), tenant.org.id, { kind: 'drawdown', id: 'same', limit: 'cl_dup', amount: '7.00' })),
          );
          expect(results.filter((r) => r.applied)).toHaveLength(1);
          const [row] = await store().query<{ outstanding: string }>(`SELECT outstanding::text AS outstanding FROM credit_limits WHERE org_id = $1`, [tenant.org.id]);
          expect(row?.outstanding).toBe('7.00');
        } finally {
          await pool.close();
        }
      });

    });
  }
});
