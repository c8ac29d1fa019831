import { describe, expect, it } from 'vitest';
import { PostgresStore } from '../../src/store/postgres-store.js';
import type { Queryable, Store } from '../../src/store/store.js';
import { importLines, SAMPLE_LINES } from '../helpers/import-lines.js';
import { lockWaiters } from '../helpers/lock-waits.js';
import { describeEachStore, distributedOnCitus } from '../helpers/stores.js';
import { createTenant, type Tenant } from '../helpers/tenants.js';

// Migration 012 replaced the per-row foreign keys of ledger_entries with
// statement-level checks; these are the guarantees the foreign keys gave.
const FOREIGN_KEY_VIOLATION = '23503';
/** Citus: "modifying the partition value of rows is not allowed" (feature_not_supported). */
const CITUS_PARTITION_VALUE_CHANGE = '0A000';
/** Citus: "functions used in UPDATE queries on distributed tables must not be VOLATILE" (feature_not_supported). */
const CITUS_VOLATILE_IN_UPDATE = '0A000';

async function codeOf(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => 'succeeded',
    (error: unknown) => (error as { code?: unknown }).code,
  );
}

/** A tenant with cl_1 (and its two entries dd_1, rp_1) and cl_empty without entries; the limits' row ids. */
async function tenantWithLimits(store: Store): Promise<{ tenant: Tenant; limitId: string; emptyId: string }> {
  const tenant = await createTenant(store);
  await importLines(store, tenant.org.uid, [...SAMPLE_LINES, { ...SAMPLE_LINES[1], uid: 'cl_empty' }]);
  const rows = await store.query<{ uid: string; id: string }>('SELECT uid, id::text AS id FROM credit_limits WHERE org_id = $1', [tenant.org.id]);
  const idOf = (uid: string) => rows.find((row) => row.uid === uid)?.id ?? '';
  return { tenant, limitId: idOf('cl_1'), emptyId: idOf('cl_empty') };
}

/** The entries and limits of these organizations, each row's organization, id and limit. */
async function entriesAndLimits(store: Store, orgIds: readonly string[]) {
  const entries = await store.query<{ org_id: string; id: string; limit_id: string }>(
    'SELECT org_id::text AS org_id, id, limit_id::text AS limit_id FROM ledger_entries WHERE org_id = ANY ($1::bigint[]) ORDER BY org_id, id',
    [orgIds],
  );
  const limits = await store.query<{ org_id: string; id: string; uid: string }>(
    'SELECT org_id::text AS org_id, id::text AS id, uid FROM credit_limits WHERE org_id = ANY ($1::bigint[]) ORDER BY org_id, id',
    [orgIds],
  );
  return { entries, limits };
}

/** `id` is written into the statement's text, so that pg_stat_activity shows which statement waits. */
function insertEntry(db: Queryable, orgId: string, limitId: string, id: 'foreign' | 'late' | 'early') {
  return db.query(`INSERT INTO ledger_entries (org_id, id, limit_id, kind, amount, at) VALUES ($1, '${id}', $2, 'drawdown', 1, now())`, [orgId, limitId]);
}

describeEachStore('ledger entries without per-row foreign keys (migration 012)', (store, kind) => {
  it('refuses an entry that names no existing credit limit, and writes none of its statement', async () => {
    const { tenant, limitId } = await tenantWithLimits(store());
    const code = await codeOf(
      store().query(
        `INSERT INTO ledger_entries (org_id, id, limit_id, kind, amount, at)
         VALUES ($1, 'ok', $2, 'drawdown', 1, now()), ($1, 'orphan', 999999999, 'drawdown', 1, now())`,
        [tenant.org.id, limitId],
      ),
    );
    expect(code).toBe(FOREIGN_KEY_VIOLATION);
    const ids = await store().query<{ id: string }>('SELECT id FROM ledger_entries WHERE org_id = $1 ORDER BY id', [tenant.org.id]);
    expect(ids.map((row) => row.id)).toEqual(['dd_1', 'rp_1']);
  });

  it("refuses an entry that names another organization's credit limit", async () => {
    const { limitId } = await tenantWithLimits(store());
    const other = await createTenant(store());
    expect(await codeOf(insertEntry(store(), other.org.id, limitId, 'foreign'))).toBe(FOREIGN_KEY_VIOLATION);
  });

  it('refuses deleting or truncating a credit limit that has entries, and deletes one that has none', async () => {
    const { tenant, limitId, emptyId } = await tenantWithLimits(store());
    expect(await codeOf(store().query('DELETE FROM credit_limits WHERE org_id = $1', [tenant.org.id]))).toBe(FOREIGN_KEY_VIOLATION);
    expect(await codeOf(store().query('TRUNCATE credit_limits'))).toBe(FOREIGN_KEY_VIOLATION);
    await store().query('DELETE FROM credit_limits WHERE id = $1', [emptyId]);
    const left = await store().query<{ id: string }>('SELECT id::text AS id FROM credit_limits WHERE org_id = $1', [tenant.org.id]);
    expect(left).toEqual([{ id: limitId }]);
  });

  it("refuses moving an entry to another limit or organization, and changing a limit's id", async () => {
    const { tenant, limitId, emptyId } = await tenantWithLimits(store());
    const other = await createTenant(store());
    const before = await entriesAndLimits(store(), [tenant.org.id, other.org.id]);
    expect(await codeOf(store().query(`UPDATE ledger_entries SET limit_id = $2 WHERE org_id = $1 AND id = 'dd_1'`, [tenant.org.id, emptyId]))).toBe(
      FOREIGN_KEY_VIOLATION,
    );
    // Citus refuses to change a row's distribution column itself, before the trigger runs.
    expect(await codeOf(store().query(`UPDATE ledger_entries SET org_id = $2 WHERE org_id = $1 AND id = 'dd_1'`, [tenant.org.id, other.org.id]))).toBe(
      distributedOnCitus(kind) ? CITUS_PARTITION_VALUE_CHANGE : FOREIGN_KEY_VIOLATION,
    );
    // The only new id an UPDATE can give (an identity column): nextval(), which Citus refuses itself in an UPDATE of a distributed table.
    expect(await codeOf(store().query(`UPDATE credit_limits SET id = DEFAULT WHERE org_id = $1 AND uid = 'cl_1'`, [tenant.org.id]))).toBe(
      distributedOnCitus(kind) ? CITUS_VOLATILE_IN_UPDATE : FOREIGN_KEY_VIOLATION,
    );
    expect(await entriesAndLimits(store(), [tenant.org.id, other.org.id])).toEqual(before);
    expect(before.limits).toContainEqual({ org_id: tenant.org.id, id: limitId, uid: 'cl_1' });
  });

  // Races need two connections: PostgreSQL only.
  if (kind === 'postgres') {
    describe('against a concurrent delete of the limit', () => {
      it('refuses the entry when the delete commits first, and the delete when the entry commits first', async () => {
        const { tenant, emptyId } = await tenantWithLimits(store());
        const [{ schema } = { schema: '' }] = await store().query<{ schema: string }>('SELECT current_schema() AS schema');
        const pool = new PostgresStore(process.env.DATABASE_URL ?? '', { poolSize: 2, searchPath: schema });
        try {
          // The entry waits for the uncommitted delete, then finds the limit gone.
          let releaseDelete = () => {};
          const deleteHeld = new Promise<void>((resolve) => (releaseDelete = resolve));
          let deleteWritten = () => {};
          const deleted = new Promise<void>((resolve) => (deleteWritten = resolve));
          const deleting = pool.transaction(async (tx) => {
            await tx.query('DELETE FROM credit_limits WHERE id = $1', [emptyId]);
            deleteWritten();
            await deleteHeld;
          });
          await deleted;
          const entry = codeOf(insertEntry(pool, tenant.org.id, emptyId, 'late'));
          await waitUntilWaitingOnLock(store(), 'late');
          releaseDelete();
          await deleting;
          expect(await entry).toBe(FOREIGN_KEY_VIOLATION);

          // The delete waits for the uncommitted entry, then finds it.
          const [{ id: heldId } = { id: '' }] = await store().query<{ id: string }>(
            `INSERT INTO credit_limits (org_id, uid, entity, currency, capacity, rate, created_at, updated_at)
             VALUES ($1, 'cl_race', 'e', 'USD', 10, 0, now(), now()) RETURNING id::text AS id`,
            [tenant.org.id],
          );
          let releaseEntry = () => {};
          const entryHeld = new Promise<void>((resolve) => (releaseEntry = resolve));
          let entryWritten = () => {};
          const written = new Promise<void>((resolve) => (entryWritten = resolve));
          const entering = pool.transaction(async (tx) => {
            await insertEntry(tx, tenant.org.id, heldId, 'early');
            entryWritten();
            await entryHeld;
          });
          await written;
          const deleteRefused = codeOf(store().query(`DELETE FROM credit_limits WHERE id = $1 AND uid = 'cl_race'`, [heldId]));
          await waitUntilWaitingOnLock(store(), 'cl_race');
          releaseEntry();
          await entering;
          expect(await deleteRefused).toBe(FOREIGN_KEY_VIOLATION);
          const [row] = await store().query<{ entries: string }>(
            'SELECT count(*)::text AS entries FROM ledger_entries e JOIN credit_limits l ON l.id = e.limit_id AND l.org_id = e.org_id WHERE e.org_id = $1',
            [tenant.org.id],
          );
          expect(row?.entries).toBe('3'); // dd_1, rp_1 and early: none orphaned
        } finally {
          await pool.close();
        }
      });
    });
  }
});

/** Polls until a statement containing `marker` is waiting for a lock (no time budget: the test's own timeout applies). */
async function waitUntilWaitingOnLock(store: Store, marker: string): Promise<void> {
  while ((await lockWaiters(store, { statementLike: marker })) === 0) await new Promise((resolve) => setTimeout(resolve, 20));
}
