import { expect, it } from 'vitest';
import { RESOURCES } from '../../src/resources/index.js';
import { useApp } from '../helpers/app.js';
import { insertRecords, sampleRecords, type Row } from '../helpers/fixtures/index.js';
import { describeEachStore } from '../helpers/stores.js';
import { createTenant } from '../helpers/tenants.js';

/*
 * The engine reuses counts and page anchors while an organization's table
 * version is unchanged, so every write a list can see must move the version
 * (migration 006). These run over every collection and over a table the
 * shipped migrations know nothing about.
 */
describeEachStore('table versions', (store) => {
  const app = useApp(store);

  for (const resource of RESOURCES.filter((candidate) => candidate.countedRows)) {
    it(`/api/${resource.path}/?updated_from= stays exact when an update changes only updated_at`, async () => {
      const tenant = await createTenant(store());
      const records = sampleRecords(resource, 6, 7).map((row): Row => ({ ...row, updated_at: '2024-05-02T08:00:00.000000Z' }));
      await insertRecords(store(), resource, tenant.org.id, records);
      const count = async () => {
        const response = await app().inject({ url: `/api/${resource.path}/?updated_from=2024-05-02`, headers: { authorization: tenant.authorization } });
        expect(response.statusCode).toBe(200);
        return response.json<{ count: number }>().count;
      };
      expect(await count()).toBe(6);
      expect(await count()).toBe(6); // remembered at this version
      await store().query(`UPDATE ${resource.table} SET updated_at = '2024-04-01T00:00:00Z' WHERE org_id = $1 AND uid = $2`, [
        tenant.org.id,
        records[0]!.uid,
      ]);
      expect(await count()).toBe(5);
    });
  }

  it('row_counts_track() counts and versions any table, leaving out only the columns it is given', async () => {
    const tenant = await createTenant(store());
    await store().exec(`
      CREATE TABLE scratch_gadgets (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, org_id bigint NOT NULL, colour text, hits integer);
      SELECT row_counts_track('scratch_gadgets', '{hits}');`);
    const counter = async () => {
      const rows = await store().query<{ row_count: string; version: string }>(
        `SELECT row_count::text, version::text FROM row_counts WHERE table_name = 'scratch_gadgets' AND org_id = $1`,
        [tenant.org.id],
      );
      return rows[0] ?? { row_count: '0', version: '0' };
    };
    await store().query(`INSERT INTO scratch_gadgets (org_id, colour, hits) SELECT $1, 'red', 0 FROM generate_series(1, 4)`, [tenant.org.id]);
    expect(await counter()).toEqual({ row_count: '4', version: '1' });
    await store().query('UPDATE scratch_gadgets SET hits = hits + 1 WHERE org_id = $1', [tenant.org.id]);
    expect(await counter()).toEqual({ row_count: '4', version: '1' });
    await store().query(`UPDATE scratch_gadgets SET colour = 'blue' WHERE org_id = $1 AND id = (SELECT min(id) FROM scratch_gadgets)`, [tenant.org.id]);
    expect(await counter()).toEqual({ row_count: '4', version: '2' });
    await store().query('DELETE FROM scratch_gadgets WHERE org_id = $1 AND colour = $2', [tenant.org.id, 'blue']);
    expect(await counter()).toEqual({ row_count: '3', version: '3' });
    // The comparison is generated for the columns the table has: a column added later is compared once it is generated again.
    await store().exec('ALTER TABLE scratch_gadgets ADD COLUMN label text');
    await store().query(`UPDATE scratch_gadgets SET label = 'new' WHERE org_id = $1`, [tenant.org.id]);
    expect(await counter()).toEqual({ row_count: '3', version: '3' });
    await store().exec(`SELECT row_counts_version_trigger('scratch_gadgets', '{hits}')`);
    await store().query(`UPDATE scratch_gadgets SET label = 'newer' WHERE org_id = $1`, [tenant.org.id]);
    expect(await counter()).toEqual({ row_count: '3', version: '4' });
    await store().query('UPDATE scratch_gadgets SET hits = hits + 1 WHERE org_id = $1', [tenant.org.id]);
    expect(await counter()).toEqual({ row_count: '3', version: '4' });
    await expect(store().query('UPDATE scratch_gadgets SET org_id = org_id + 1')).rejects.toThrow(/org_id cannot change/);
    await expect(store().exec(`CREATE TABLE scratch_typo (id bigint, org_id bigint); SELECT row_counts_track('scratch_typo', '{hitz}');`)).rejects.toThrow(
      /no column hitz/,
    );
  });
});
