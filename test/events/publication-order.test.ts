import { expect, it } from 'vitest';
import { publicationStatements, publishAllEvents } from '../../src/events/publish-events.js';
import { creditLimit, insertCreditLimits } from '../helpers/records.js';
import { describeEachStore } from '../helpers/stores.js';
import { createTenant } from '../helpers/tenants.js';

const BATCH = 150;

describeEachStore('a publication of outbox rows stored out of their order', (store) => {
  it('stamps them in the order they were recorded, each once, whatever order the plan reads them in', async () => {
    const tenant = await createTenant(store(), 'Reused outbox space', 'write');
    const orgId = tenant.org.id;
    const batch = (name: string) => Array.from({ length: BATCH }, (_, i) => creditLimit({ uid: `cl_${name}_${String(i).padStart(3, '0')}` }));
    await insertCreditLimits(store(), orgId, batch('published'));
    await publishAllEvents(store(), orgId);
    await insertCreditLimits(store(), orgId, batch('early'));
    // The published rows' space is free again: the next rows are stored before the earlier ones, as under autovacuum.
    await store().exec('VACUUM event_outbox');
    await insertCreditLimits(store(), orgId, batch('late'));

    // A plan that reads the outbox in storage order (as a large outbox's hash join does), not by its index.
    const [, [published]] = (await store().transaction(async (tx) => {
      await tx.exec('SET LOCAL enable_indexscan = off; SET LOCAL enable_bitmapscan = off; SET LOCAL enable_indexonlyscan = off');
      const rows: unknown[][] = [];
      for (const statement of publicationStatements(orgId)) rows.push(await tx.query(statement.sql, statement.params));
      return rows;
    })) as [unknown[], { published: number }[]];
    expect(published?.published).toBe(2 * BATCH);
    const logged = await store().query<{ object_uid: string }>(
      `SELECT object_uid FROM events WHERE org_id = $1 AND object_uid NOT LIKE 'cl_published_%' ORDER BY created_at, id`,
      [orgId],
    );
    expect(logged.map((event) => event.object_uid)).toEqual([...batch('early'), ...batch('late')].map((limit) => limit.uid));
  });
});
