import { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../helpers/app.js';
import { importJsonl } from '../../src/import/index.js';
import { creditLimit, insertCreditLimits, insertPaymentMethods, paymentMethod } from '../helpers/records.js';
import { describeEachStore, distributedOnCitus } from '../helpers/stores.js';
import { createTenant, type Tenant } from '../helpers/tenants.js';

describeEachStore('exact count of an unfiltered list', (store, kind) => {
  let app: FastifyInstance;
  beforeAll(async () => {
    app = await buildApp({ store: store() });
  });
  afterAll(async () => {
    await app.close();
  });

  async function countOf(tenant: Tenant, path: string): Promise<number> {
    const response = await app.inject({ url: path, headers: { authorization: tenant.authorization } });
    expect(response.statusCode).toBe(200);
    const body = response.json<{ count: number }>();
    return body.count;
  }

  async function tableCount(table: string, tenant: Tenant): Promise<number> {
    const [row] = await store().query<{ n: string }>(`SELECT count(*)::text AS n FROM ${table} WHERE org_id = $1`, [tenant.org.id]);
    return Number(row?.n);
  }

  it('is 0 for an organization with no records', async () => {
    const tenant = await createTenant(store());
    expect(await countOf(tenant, '/api/methods/')).toBe(0);
    expect(await countOf(tenant, '/api/limits/')).toBe(0);
  });

  it('counts rows inserted in bulk and one at a time, per organization', async () => {
    const tenant = await createTenant(store());
    const other = await createTenant(store());
    await insertPaymentMethods(store(), tenant.org.id, Array.from({ length: 1234 }, () => paymentMethod()));
    await insertPaymentMethods(store(), tenant.org.id, [paymentMethod()]);
    await insertPaymentMethods(store(), other.org.id, [paymentMethod(), paymentMethod()]);
    await insertCreditLimits(store(), tenant.org.id, Array.from({ length: 15 }, () => creditLimit()));
    expect(await countOf(tenant, '/api/methods/')).toBe(1235);
    expect(await countOf(other, '/api/methods/')).toBe(2);
    expect(await countOf(tenant, '/api/limits/')).toBe(15);
    expect(await countOf(other, '/api/limits/')).toBe(0);
  });

  it('counts only the new rows of an upsert that also updates existing ones', async () => {
    const tenant = await createTenant(store());
    const existing = Array.from({ length: 20 }, () => creditLimit());
    await insertCreditLimits(store(), tenant.org.id, existing);
    const fresh = Array.from({ length: 5 }, () => creditLimit());
    await store().query(
      `INSERT INTO credit_limits (org_id, uid, entity, currency, capacity, rate, created_at, updated_at)
       SELECT $1, uid, 'ent_upsert', 'EUR', 100, 0.001, now(), now() FROM unnest($2::text[]) AS uid
       ON CONFLICT (org_id, uid) DO UPDATE SET capacity = excluded.capacity, updated_at = excluded.updated_at`,
      [tenant.org.id, [...existing.slice(0, 10), ...fresh].map((row) => row.uid)],
    );
    expect(await countOf(tenant, '/api/limits/')).toBe(25);
    expect(await countOf(tenant, '/api/limits/')).toBe(await tableCount('credit_limits', tenant));
  });

  it('stays exact through imports, and importing the same file again adds nothing', async () => {
    const tenant = await createTenant(store());
    const lines = (from: number, to: number) =>
      Array.from({ length: to - from }, (_, i) =>
        JSON.stringify({
          object: 'payment_method',
          uid: `pm_import_${from + i}`,
          entity: 'ent_1',
          type: 'SEPA',
          currency: 'EUR',
          last_2: '12',
          created_at: '2024-05-01T10:00:00Z',
        }),
      ).join('\n');
    await importJsonl(store(), tenant.org.uid, Readable.from([lines(0, 300)]));
    await importJsonl(store(), tenant.org.uid, Readable.from([lines(0, 300)]));
    expect(await countOf(tenant, '/api/methods/')).toBe(300);
    // Half already there (and changed), half new.
    await importJsonl(store(), tenant.org.uid, Readable.from([lines(150, 450).replaceAll('"SEPA"', '"WIRE"')]));
    expect(await countOf(tenant, '/api/methods/')).toBe(450);
    expect(await countOf(tenant, '/api/methods/')).toBe(await tableCount('payment_methods', tenant));
  });

  it('ignores rows an upsert skips as duplicates', async () => {
    const tenant = await createTenant(store());
    const rows = Array.from({ length: 7 }, () => paymentMethod());
    await insertPaymentMethods(store(), tenant.org.id, rows);
    await store().query(
      `INSERT INTO payment_methods (org_id, uid, entity, type, currency, last_2, created_at, updated_at)
       SELECT $1, uid, 'ent_1', 'ACH', 'USD', '00', now(), now() FROM unnest($2::text[]) AS uid
       ON CONFLICT (org_id, uid) DO NOTHING`,
      [tenant.org.id, rows.map((row) => row.uid)],
    );
    expect(await countOf(tenant, '/api/methods/')).toBe(7);
  });

  it('subtracts deleted rows', async () => {
    const tenant = await createTenant(store());
    const rows = Array.from({ length: 30 }, () => paymentMethod());
    await insertPaymentMethods(store(), tenant.org.id, rows);
    await store().query('DELETE FROM payment_methods WHERE org_id = $1 AND uid = ANY($2::text[])', [
      tenant.org.id,
      rows.slice(0, 12).map((row) => row.uid),
    ]);
    expect(await countOf(tenant, '/api/methods/')).toBe(18);
    const paged = await app.inject({ url: '/api/methods/?page=2', headers: { authorization: tenant.authorization } });
    expect(paged.json<{ next: string | null; items: unknown[] }>()).toMatchObject({ next: null });
    expect(paged.json<{ items: unknown[] }>().items).toHaveLength(8);
  });

  it('does not change when the inserting transaction rolls back', async () => {
    const tenant = await createTenant(store());
    await insertPaymentMethods(store(), tenant.org.id, [paymentMethod()]);
    await expect(
      store().transaction(async (tx) => {
        await insertPaymentMethods(tx, tenant.org.id, Array.from({ length: 50 }, () => paymentMethod()));
        throw new Error('abandon the import');
      }),
    ).rejects.toThrow('abandon the import');
    expect(await countOf(tenant, '/api/methods/')).toBe(1);
  });

  it('refuses to move a record to another organization, which would corrupt both counts', async () => {
    const tenant = await createTenant(store());
    const other = await createTenant(store());
    const row = paymentMethod();
    await insertPaymentMethods(store(), tenant.org.id, [row]);
    // Citus refuses to change a row's distribution column itself, before the trigger runs.
    await expect(
      store().query('UPDATE payment_methods SET org_id = $1 WHERE org_id = $2 AND uid = $3', [other.org.id, tenant.org.id, row.uid]),
    ).rejects.toThrow(distributedOnCitus(kind) ? /modifying the partition value of rows is not allowed/ : /org_id cannot change/);
    expect(await countOf(tenant, '/api/methods/')).toBe(1);
    expect(await countOf(other, '/api/methods/')).toBe(0);
  });

  it('matches count(*) for filtered lists, which are counted from the index', async () => {
    const tenant = await createTenant(store());
    await insertPaymentMethods(store(), tenant.org.id, [
      paymentMethod({ currency: 'EUR' }),
      paymentMethod({ currency: 'EUR' }),
      paymentMethod({ currency: 'USD' }),
    ]);
    expect(await countOf(tenant, '/api/methods/?currency=eur')).toBe(2);
    expect(await countOf(tenant, '/api/methods/')).toBe(3);
  });

  describe('under concurrent writers', () => {
    it('stays exact when many transactions insert into one organization at once', async () => {
      const tenant = await createTenant(store());
      await Promise.all(
        Array.from({ length: 8 }, () =>
          store().transaction((tx) => insertPaymentMethods(tx, tenant.org.id, Array.from({ length: 40 }, () => paymentMethod()))),
        ),
      );
      expect(await countOf(tenant, '/api/methods/')).toBe(320);
      expect(await countOf(tenant, '/api/methods/')).toBe(await tableCount('payment_methods', tenant));
    });
  });
});
