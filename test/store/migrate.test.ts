import { expect, it } from 'vitest';
import { loadMigrations, migrate, pendingMigrations } from '../../src/store/migrate.js';
import { describeEachStore } from '../helpers/stores.js';

describeEachStore('migrate', (store) => {
  it('records every shipped migration once and is a no-op when up to date', async () => {
    const shipped = await loadMigrations();
    expect(shipped.map((m) => m.version)).toEqual([...shipped.map((m) => m.version)].sort((a, b) => a - b));
    const rows = await store().query<{ version: number }>('SELECT version FROM schema_migrations ORDER BY version');
    expect(rows.map((r) => r.version)).toEqual(shipped.map((m) => m.version));
    expect(await migrate(store())).toEqual([]);
    expect(await pendingMigrations(store())).toEqual([]);
  });

  it('applies each migration exactly once when several processes migrate at once', async () => {
    const results = await Promise.all([migrate(store()), migrate(store()), migrate(store())]);
    expect(results.flat()).toEqual([]);
    const [{ count }] = (await store().query<{ count: string }>('SELECT count(*)::text AS count FROM schema_migrations')) as [{ count: string }];
    expect(Number(count)).toBe((await loadMigrations()).length);
  });

  it('makes an overdrawn credit limit impossible at the database level', async () => {
    const [org] = await store().query<{ id: string }>("INSERT INTO organizations (uid, name) VALUES ('org_check_' || md5(random()::text), 'x') RETURNING id::text AS id");
    await expect(
      store().query(
        `INSERT INTO credit_limits (org_id, uid, entity, currency, capacity, outstanding, rate, created_at, updated_at)
         VALUES ($1, 'cl_over', 'e', 'USD', 100, 100.01, 0, now(), now())`,
        [org?.id],
      ),
    ).rejects.toThrow(/credit_limits_outstanding_within_capacity/);
  });
});
