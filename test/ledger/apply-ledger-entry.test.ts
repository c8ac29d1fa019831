import { describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.js';
import { applyLedgerEntry, LedgerError } from '../../src/ledger/index.js';
import type { Store } from '../../src/store/store.js';
import { dumpAllTables, importLines, SAMPLE_LINES } from '../helpers/import-lines.js';
import { describeEachStore } from '../helpers/stores.js';
import { createTenant, type Tenant } from '../helpers/tenants.js';

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

describeEachStore('applyLedgerEntry', (store) => {
  describe('real-time utilization', () => {
    it('shows a drawdown at once in GET /api/limits/: outstanding, balance, updated_at, and updated_from finds it', async () => {
      const tenant = await tenantWithLimit(store());
      const result = await applyLedgerEntry(store(), tenant.org.id, { kind: 'drawdown', id: 'dd_rt', limit: 'cl_1', amount: '2500.50' });

      const all = await limitFromApi(store(), tenant);
      expect(all.items[0]).toMatchObject({ uid: 'cl_1', outstanding: 3500.5, balance: 46499.5, updated_at: result.updated_at });
      const synced = await limitFromApi(store(), tenant, `?updated_from=${encodeURIComponent(result.updated_at)}`);
      expect(synced.count).toBe(1);
      expect(synced.items[0]).toMatchObject({ uid: 'cl_1', outstanding: 3500.5 });
    });

    it('lowers outstanding on a repayment and sets updated_at to the entry time', async () => {
      const tenant = await tenantWithLimit(store());
      const result = await applyLedgerEntry(store(), tenant.org.id, {
        kind: 'repayment',
        id: 'rp_x',
        limit: 'cl_1',
        amount: '1000.00',
        at: '2030-01-01T00:00:00.000001Z',
      });
      expect(result).toMatchObject({ applied: true, outstanding: '0.00', balance: '50000.00', updated_at: '2030-01-01T00:00:00.000001Z' });
      expect((await limitFromApi(store(), tenant)).items[0]).toMatchObject({ outstanding: 0, updated_at: '2030-01-01T00:00:00.000001Z' });
    });

    it('allows drawing exactly the balance', async () => {
      const tenant = await tenantWithLimit(store());
      const result = await applyLedgerEntry(store(), tenant.org.id, { kind: 'drawdown', id: 'all', limit: 'cl_1', amount: '49000.00' });
      expect(result).toMatchObject({ outstanding: '50000.00', balance: '0.00' });
    });
  });

  describe('refusals change nothing', () => {
    const refusals: [string, { kind: 'drawdown' | 'repayment'; limit: string; amount: string }, string, RegExp][] = [
      ['a drawdown above the balance', { kind: 'drawdown', limit: 'cl_1', amount: '49000.01' }, 'insufficient_balance', /drawdown of 49000.01 refused: it exceeds the balance of cl_1 \(balance 49000.00/],
      ['a repayment above outstanding', { kind: 'repayment', limit: 'cl_1', amount: '1000.01' }, 'exceeds_outstanding', /repayment of 1000.01 refused: it exceeds the outstanding amount of cl_1 \(outstanding 1000.00\)/],
      ['an unknown limit', { kind: 'drawdown', limit: 'cl_nope', amount: '1.00' }, 'limit_not_found', /no credit limit 'cl_nope'/],
    ];
    for (const [name, entry, code, message] of refusals) {
      it(`refuses ${name}`, async () => {
        const tenant = await tenantWithLimit(store());
        const before = await dumpAllTables(store());
        const error = await applyLedgerEntry(store(), tenant.org.id, { ...entry, id: 'refused' }).catch((e: unknown) => e);
        expect(error).toBeInstanceOf(LedgerError);
        expect((error as LedgerError).code).toBe(code);
        expect((error as LedgerError).message).toMatch(message);
        expect(await dumpAllTables(store())).toBe(before);
      });
    }

    it("never touches another organization's limit", async () => {
      const owner = await tenantWithLimit(store());
      const other = await createTenant(store());
      const error = await applyLedgerEntry(store(), other.org.id, { kind: 'drawdown', id: 'x', limit: 'cl_1', amount: '1.00' }).catch((e: unknown) => e);
      expect((error as LedgerError).code).toBe('limit_not_found');
      expect((await limitFromApi(store(), owner)).items[0]).toMatchObject({ outstanding: 1000 });
    });
  });

  describe('idempotency by id', () => {
    it('treats the same id with the same content as a no-op', async () => {
      const tenant = await tenantWithLimit(store());
      const entry = { kind: 'drawdown', id: 'dd_same', limit: 'cl_1', amount: '10.00' } as const;
      const first = await applyLedgerEntry(store(), tenant.org.id, entry);
      const before = await dumpAllTables(store());

      const second = await applyLedgerEntry(store(), tenant.org.id, entry);

      expect(first.applied).toBe(true);
      expect(second).toMatchObject({ applied: false, outstanding: '1010.00', at: first.at });
      expect(await dumpAllTables(store())).toBe(before);
    });

    it('replays as a no-op even when the limit could no longer take it', async () => {
      const tenant = await tenantWithLimit(store());
      await applyLedgerEntry(store(), tenant.org.id, { kind: 'drawdown', id: 'big', limit: 'cl_1', amount: '49000.00' });
      const again = await applyLedgerEntry(store(), tenant.org.id, { kind: 'drawdown', id: 'big', limit: 'cl_1', amount: '49000.00' });
      expect(again).toMatchObject({ applied: false, outstanding: '50000.00' });
    });

    it('refuses the same id with different content', async () => {
      const tenant = await tenantWithLimit(store());
      await applyLedgerEntry(store(), tenant.org.id, { kind: 'drawdown', id: 'dd_c', limit: 'cl_1', amount: '10.00' });
      const before = await dumpAllTables(store());
      for (const changed of [
        { kind: 'drawdown', amount: '11.00' },
        { kind: 'repayment', amount: '10.00' },
      ] as const) {
        const error = await applyLedgerEntry(store(), tenant.org.id, { ...changed, id: 'dd_c', limit: 'cl_1' }).catch((e: unknown) => e);
        expect((error as LedgerError).code).toBe('id_conflict');
        expect((error as LedgerError).message).toMatch(/ledger entry 'dd_c' already exists with different content \(drawdown of 10.00 on cl_1/);
      }
      expect(await dumpAllTables(store())).toBe(before);
    });

    it('shares ids with import ledger lines', async () => {
      const tenant = await tenantWithLimit(store());
      const replay = await applyLedgerEntry(store(), tenant.org.id, { kind: 'drawdown', id: 'dd_1', limit: 'cl_1', amount: '1200.00' });
      expect(replay.applied).toBe(false);
    });
  });
});
