import { describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../helpers/app.js';
import { publishAllEvents } from '../../src/events/publish-events.js';
import type { Page } from '../helpers/app.js';
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

/**
 * The log through the HTTP API, as a client follows it (docs/webhooks.md): oldest first by cursor from the last
 * event it handled (`created_from` is inclusive, so that one is skipped), `next` after `next` until it is null.
 */
async function walkApi(app: FastifyInstance, authorization: string, lastSeen: LoggedEvent | undefined): Promise<LoggedEvent[]> {
  const events: LoggedEvent[] = [];
  let next: string | null = `/api/events/?order_by=created_at${lastSeen ? `&created_from=${encodeURIComponent(lastSeen.created_at)}` : ''}&cursor=`;
  while (next !== null) {
    const response: Awaited<ReturnType<FastifyInstance['inject']>> = await app.inject({ url: next, headers: { authorization } });
    expect(response.statusCode, response.body).toBe(200);
    const page: Page<{ id: string; type: string; created_at: string; data: { object: { uid: string } } }> = response.json<Page<{ id: string; type: string; created_at: string; data: { object: { uid: string } } }>>();
    for (const event of page.items) {
      if (event.id !== lastSeen?.uid) events.push({ uid: event.id, type: event.type, object_uid: event.data.object.uid, created_at: event.created_at });
    }
    next = page.next === null ? null : new URL(page.next).pathname + new URL(page.next).search;
  }
  return events;
}

// Needs a second connection holding a transaction open while others commit: PostgreSQL only (PGlite is one connection).
describe.runIf(postgresUrl && /^postgres(ql)?:/.test(postgresUrl))('the event log and a transaction that commits late (on postgres)', () => {
  it('a walk from the last event read still finds the event of a transaction that began before it and committed after it', async () => {
    const store = await openPostgresTestStore(postgresUrl, 4);
    const app = await buildApp({ store });
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
      // A client of the API, walking the log oldest first by cursor.
      const read = await walkApi(app, tenant.authorization, undefined);
      expect(read).toEqual(seeded);

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
      const readWhileOpen = await walkApi(app, tenant.authorization, read.at(-1));
      expect(readWhileOpen).toEqual(whileOpen);

      releaseLate();
      await late;
      await publishAllEvents(store, orgId);
      const afterCommit = await eventsAfter(store, orgId, cursor);
      expect(afterCommit.map((event) => `${event.type} ${event.object_uid}`)).toEqual(['credit_limit.updated cl_late']);
      // The API walk, continued from the last event it read, finds the late event too: nothing missed.
      const readAfterCommit = await walkApi(app, tenant.authorization, readWhileOpen.at(-1));
      expect(readAfterCommit).toEqual(afterCommit);
      expect([...read, ...readWhileOpen, ...readAfterCommit]).toEqual(await eventsAfter(store, orgId, null));

      const all = await eventsAfter(store, orgId, null);
      const quickUpdates = all.filter((event) => event.object_uid === 'cl_quick' && event.type === 'credit_limit.updated');
      expect(quickUpdates).toHaveLength(3);
      const stamps = all.map((event) => event.created_at);
      expect(new Set(stamps).size).toBe(stamps.length);
    } finally {
      await app.close();
      await store.close();
    }
  });
});
