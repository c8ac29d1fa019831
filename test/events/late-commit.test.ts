import { describe, expect, it } from 'vitest';
import { publishAllEvents } from '../../src/events/publish-events.js';
import { creditLimit, insertCreditLimits } from '../helpers/records.js';
import { openPostgresTestStore } from '../helpers/stores.js';
import { createTenant } from '../helpers/tenants.js';

const postgresUrl = process.env.DATABASE_URL;

interface LoggedEvent {
  uid: string;
  type: string;
  object_uid: string;
  created_at: string;
}

/** The log after a cursor, oldest first, as a client walking it sees it. */
async function eventsAfter(store: Awaited<ReturnType<typeof openPostgresTestStore>>, orgId: string, after: string | null): Promise<LoggedEvent[]> {
  return store.query<LoggedEvent>(
    `SELECT uid, type, object_uid, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS created_at
       FROM events WHERE org_id = $1 AND ($2::timestamptz IS NULL OR created_at > $2::timestamptz) ORDER BY created_at, id`,
    [orgId, after],
  );
}

// Needs a second connection holding a transaction open while others commit: PostgreSQL only (PGlite is one connection).
describe.runIf(postgresUrl && /^postgres(ql)?:/.test(postgresUrl))('the event log and a transaction that commits late (on postgres)', () => {
  it('a walk from the last event read still finds the event of a transaction that began before it and committed after it', async () => {
    const store = await openPostgresTestStore(postgresUrl, 4);
    try {
      const tenant = await createTenant(store, 'Late commit', 'write');
      const orgId = tenant.org.id;
      await insertCreditLimits(store, orgId, [
        creditLimit({ uid: 'cl_late', capacity: '1000.00', outstanding: '0.00' }),
        creditLimit({ uid: 'cl_quick', capacity: '1000.00', outstanding: '0.00' }),
      ]);
      await publishAllEvents(store, orgId);
      const seeded = await eventsAfter(store, orgId, null);
      let cursor = seeded.at(-1)?.created_at ?? null;

      let releaseLate!: () => void;
      const lateMayCommit = new Promise<void>((resolve) => (releaseLate = resolve));
      let lateChanged!: () => void;
      const lateHasChanged = new Promise<void>((resolve) => (lateChanged = resolve));
      const late = store.transaction(async (tx) => {
        await tx.query(`UPDATE credit_limits SET outstanding = 500, updated_at = now() WHERE org_id = $1 AND uid = 'cl_late'`, [orgId]);
        lateChanged();
        await lateMayCommit;
      });
      await lateHasChanged;

      // (Outstanding, as a drawdown moves it: no lock on the table's version row, which would make the others wait.)
      // Others commit while the late transaction is open; the log is published and read past them.
      for (let i = 0; i < 3; i += 1) {
        await store.query(`UPDATE credit_limits SET outstanding = outstanding + 1, updated_at = now() WHERE org_id = $1 AND uid = 'cl_quick'`, [orgId]);
      }
      await publishAllEvents(store, orgId);
      const whileOpen = await eventsAfter(store, orgId, cursor);
      expect(whileOpen.map((event) => `${event.type} ${event.object_uid}`)).toEqual(Array.from({ length: 3 }, () => 'credit_limit.updated cl_quick'));
      cursor = whileOpen.at(-1)?.created_at ?? cursor;

      releaseLate();
      await late;
      await publishAllEvents(store, orgId);
      const afterCommit = await eventsAfter(store, orgId, cursor);
      expect(afterCommit.map((event) => `${event.type} ${event.object_uid}`)).toEqual(['credit_limit.updated cl_late']);

      const all = await eventsAfter(store, orgId, null);
      const quickUpdates = all.filter((event) => event.object_uid === 'cl_quick' && event.type === 'credit_limit.updated');
      expect(quickUpdates).toHaveLength(3);
      const stamps = all.map((event) => event.created_at);
      expect(new Set(stamps).size).toBe(stamps.length);
    } finally {
      await store.close();
    }
  });
});
