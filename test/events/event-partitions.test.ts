import { randomBytes } from 'node:crypto';
import { expect, it } from 'vitest';
import { dayOf, dayPartitions, dropExpiredPartitions, ensureDayPartitions, partitionName } from '../../src/events/event-partitions.js';
import { pruneEvents } from '../../src/events/event-prune.js';
import { eventsAfter, parseStreamQuery } from '../../src/events/event-stream-reader.js';
import { publishAllEvents } from '../../src/events/publish-events.js';
import { loadMigrations, migrate } from '../../src/store/migrate.js';
import { PgliteStore } from '../../src/store/pglite-store.js';
import { PostgresStore } from '../../src/store/postgres-store.js';
import type { Store } from '../../src/store/store.js';
import { creditLimit, insertCreditLimits } from '../helpers/records.js';
import { describeEachStore } from '../helpers/stores.js';
import { createTenant } from '../helpers/tenants.js';
import { insertEndpoint } from '../webhooks/deliverer-helpers.js';

const DAY_MS = 86_400_000;

/** A partition's name as tableoid names it: on Citus, the shard's, schema-qualified and with a suffix. */
const partitionOf = (tableoid: string): string => tableoid.replace(/^.*\./, '').replace(/^(.*(?:_default|_p\d{8}))_\d+$/, '$1');

/** Where a row is stored: its partition's name. */
async function partitionsOf(store: Store, table: string, orgId: string): Promise<string[]> {
  const rows = await store.query<{ partition: string }>(`SELECT tableoid::regclass::text AS partition FROM ${table} WHERE org_id = $1 ORDER BY id`, [orgId]);
  return rows.map((row) => partitionOf(row.partition));
}

describeEachStore('event partitions', (store) => {
  it('a write on a day without a partition lands in the default partition; the job then makes the days ahead', async () => {
    const tenant = await createTenant(store(), 'Partition default', 'write');
    const orgId = tenant.org.id;
    // Far ahead of every partition made: the publication stamps after the organization's clock.
    await store().query(`INSERT INTO event_streams (org_id, published_through) VALUES ($1, now() + interval '40 days')`, [orgId]);
    await insertEndpoint(store(), orgId, 'http://127.0.0.1:9/');
    await insertCreditLimits(store(), orgId, [creditLimit()]);
    expect(await publishAllEvents(store(), orgId)).toBe(1);
    expect(await partitionsOf(store(), 'events', orgId)).toEqual(['events_default']);
    expect(await partitionsOf(store(), 'webhook_deliveries', orgId)).toEqual(['webhook_deliveries_default']);

    const today = dayOf(new Date());
    await ensureDayPartitions(store(), today);
    for (const table of ['events', 'webhook_deliveries', 'webhook_attempts']) {
      const names = (await dayPartitions(store(), table)).map((partition) => partition.name);
      for (let ahead = 0; ahead <= 2; ahead += 1) expect(names).toContain(partitionName(table, new Date(today.getTime() + ahead * DAY_MS)));
    }
    // A day the default partition holds rows of gets none: the rows stay readable where they are.
    const inDefault = dayOf(new Date(Date.now() + 40 * DAY_MS));
    const ensured = await ensureDayPartitions(store(), inDefault, 0);
    expect(ensured.skipped).toContain(partitionName('events', inDefault));
    expect(await partitionsOf(store(), 'events', orgId)).toEqual(['events_default']);
  });

  it('events published across midnight enter the log exactly once, in order, in both days; the list and the stream read across them', async () => {
    const tenant = await createTenant(store(), 'Partition midnight', 'write');
    const orgId = tenant.org.id;
    const tomorrow = new Date(dayOf(new Date()).getTime() + DAY_MS);
    const midnight = new Date(tomorrow.getTime() + DAY_MS);
    // The organization's clock 3 µs before the midnight after tomorrow: six events stamp 3 before it and 3 after.
    await store().query(`INSERT INTO event_streams (org_id, published_through) VALUES ($1, $2::timestamptz - interval '4 microseconds')`, [orgId, midnight.toISOString()]);
    await insertCreditLimits(store(), orgId, Array.from({ length: 6 }, () => creditLimit()));
    expect(await publishAllEvents(store(), orgId)).toBe(6);
    const stored = await store().query<{ uid: string }>('SELECT uid FROM events WHERE org_id = $1 ORDER BY created_at, id', [orgId]);
    expect(new Set(stored.map((row) => row.uid)).size).toBe(6);
    const inOrder = await store().query<{ partition: string }>('SELECT tableoid::regclass::text AS partition FROM events WHERE org_id = $1 ORDER BY created_at, id', [orgId]);
    expect(inOrder.map((row) => partitionOf(row.partition))).toEqual([
      ...Array.from({ length: 3 }, () => partitionName('events', tomorrow)),
      ...Array.from({ length: 3 }, () => partitionName('events', midnight)),
    ]);
    const streamed = await eventsAfter(store(), orgId, parseStreamQuery(''), { sortKey: '-infinity', rowId: '0' }, 100);
    expect(streamed.map((event) => event.id)).toEqual(stored.map((row) => row.uid));
    // From the third event (the last before midnight) on: the three after it.
    const resumed = await eventsAfter(store(), orgId, parseStreamQuery(''), streamed[2]!.position, 100);
    expect(resumed.map((event) => event.id)).toEqual(stored.slice(3).map((row) => row.uid));
    // A second publication moves nothing: each outbox row entered the log once.
    expect(await publishAllEvents(store(), orgId)).toBe(0);
  });

  it('pruning drops the day partitions past the retention, keeps the newer ones and a day whose delivery is still pending', async () => {
    const tenant = await createTenant(store(), 'Partition prune', 'write');
    const orgId = tenant.org.id;
    const endpoint = await insertEndpoint(store(), orgId, 'http://127.0.0.1:9/');
    const now = new Date();
    // Day partitions 40, 39 and 2 days ago, one event (and its delivery and attempt) in each.
    const days = [40, 39, 2].map((ago) => dayOf(new Date(now.getTime() - ago * DAY_MS)));
    for (const day of days) await ensureDayPartitions(store(), day, 0);
    await insertCreditLimits(store(), orgId, Array.from({ length: 3 }, () => creditLimit()));
    await publishAllEvents(store(), orgId);
    const events = await store().query<{ id: string; uid: string }>('SELECT id::text AS id, uid FROM events WHERE org_id = $1 ORDER BY id', [orgId]);
    for (const [index, event] of events.entries()) {
      const at = new Date(days[index]!.getTime() + 3_600_000).toISOString();
      await store().query('UPDATE events SET created_at = $3 WHERE org_id = $1 AND id = $2', [orgId, event.id, at]);
      await store().query(`UPDATE webhook_deliveries SET event_created_at = $3, state = $4 WHERE org_id = $1 AND event_id = $2`, [
        orgId,
        event.id,
        at,
        index === 1 ? 'pending' : 'delivered',
      ]);
      await store().query(
        `INSERT INTO webhook_attempts (org_id, endpoint_id, delivery_id, event_uid, attempt, status_code, duration_ms, created_at)
         SELECT $1, $2, d.id, $3, 1, 200, 5, $4 FROM webhook_deliveries d WHERE d.org_id = $1 AND d.event_id = $5`,
        [orgId, endpoint.id, event.uid, at, event.id],
      );
    }
    const dropped = await dropExpiredPartitions(store(), 30, now);
    expect(dropped.dropped).toEqual(
      expect.arrayContaining([partitionName('events', days[0]!), partitionName('webhook_deliveries', days[0]!), partitionName('webhook_attempts', days[0]!)]),
    );
    expect(dropped.kept).toContain(partitionName('events', days[1]!));
    const left = await store().query<{ uid: string }>('SELECT uid FROM events WHERE org_id = $1 ORDER BY created_at', [orgId]);
    expect(left.map((row) => row.uid)).toEqual([events[1]!.uid, events[2]!.uid]);
    expect(await partitionsOf(store(), 'webhook_deliveries', orgId)).toEqual([partitionName('webhook_deliveries', days[1]!), partitionName('webhook_deliveries', days[2]!)]);
    // Once delivered, the kept day goes too; the recent one stays.
    await store().query(`UPDATE webhook_deliveries SET state = 'delivered' WHERE org_id = $1`, [orgId]);
    const counts = await pruneEvents(store(), 30, 1000, now);
    expect(counts.partitions).toBeGreaterThanOrEqual(2);
    expect((await store().query<{ uid: string }>('SELECT uid FROM events WHERE org_id = $1', [orgId])).map((row) => row.uid)).toEqual([events[2]!.uid]);
    expect(await partitionsOf(store(), 'webhook_attempts', orgId)).toEqual([partitionName('webhook_attempts', days[2]!)]);
  });

  it('a day whose pending delivery sits in the default partition (its day partition never made) keeps its events', async () => {
    const tenant = await createTenant(store(), 'Partition pending in default', 'write');
    const orgId = tenant.org.id;
    await insertEndpoint(store(), orgId, 'http://127.0.0.1:9/');
    const now = new Date();
    const day = dayOf(new Date(now.getTime() - 45 * DAY_MS));
    await ensureDayPartitions(store(), day, 0);
    await store().exec(`DROP TABLE ${partitionName('webhook_deliveries', day)}`);
    await insertCreditLimits(store(), orgId, [creditLimit()]);
    await publishAllEvents(store(), orgId);
    const at = new Date(day.getTime() + 3_600_000).toISOString();
    await store().query('UPDATE events SET created_at = $2 WHERE org_id = $1', [orgId, at]);
    await store().query(`UPDATE webhook_deliveries SET event_created_at = $2, state = 'pending' WHERE org_id = $1`, [orgId, at]);
    expect(await partitionsOf(store(), 'webhook_deliveries', orgId)).toEqual(['webhook_deliveries_default']);

    const dropped = await dropExpiredPartitions(store(), 30, now);
    expect(dropped.kept).toContain(partitionName('events', day));
    expect(dropped.dropped).not.toContain(partitionName('events', day));
    expect(await partitionsOf(store(), 'events', orgId)).toEqual([partitionName('events', day)]);
    // Given up, the delivery no longer holds the day.
    await store().query(`UPDATE webhook_deliveries SET state = 'failed' WHERE org_id = $1`, [orgId]);
    expect((await dropExpiredPartitions(store(), 30, now)).dropped).toContain(partitionName('events', day));
    expect(await partitionsOf(store(), 'events', orgId)).toEqual([]);
  });
});

/** A store with an empty schema (nothing migrated), on the same kind of database as `like`. */
async function emptyStore(like: Store): Promise<Store> {
  if (like.kind === 'pglite') return PgliteStore.open(undefined);
  const url = process.env.DATABASE_URL!;
  const schema = `test_part_${randomBytes(6).toString('hex')}`;
  const admin = new PostgresStore(url, { poolSize: 1 });
  await admin.query(`CREATE SCHEMA ${schema}`);
  await admin.close();
  const store = new PostgresStore(url, { poolSize: 2, searchPath: schema });
  const close = store.close.bind(store);
  store.close = async () => {
    await store.query(`DROP SCHEMA ${schema} CASCADE`).catch(() => {});
    await close();
  };
  return store;
}

describeEachStore('migration 025', (store) => {
  it('keeps every event, delivery and attempt with its id, and the identities continue after them', async () => {
    const db = await emptyStore(store());
    try {
      for (const migration of (await loadMigrations()).filter((m) => m.version < 25)) {
        await db.transaction(async (tx) => {
          await tx.exec('CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())');
          await tx.exec(migration.sql);
          await tx.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [migration.version, migration.name]);
        });
      }
      const tenant = await createTenant(db, 'Before 025', 'write');
      const orgId = tenant.org.id;
      const endpoint = await insertEndpoint(db, orgId, 'http://127.0.0.1:9/');
      // Five events of three days (10 days ago, yesterday, today), as the publication before 025 wrote them.
      await db.query(
        `WITH inserted AS (
           INSERT INTO events (org_id, uid, type, object_uid, data_object, created_at)
           SELECT $1, 'evt_before_' || n, 'credit_limit.created', 'cl_' || n, '{}'::jsonb, now() - (n % 3) * interval '1 day' - (n % 3 / 2) * interval '8 days' + n * interval '1 microsecond'
             FROM generate_series(1, 5) AS n
           RETURNING id, created_at
         )
         INSERT INTO webhook_deliveries (org_id, endpoint_id, event_id, next_attempt_at, created_at, updated_at)
         SELECT $1, $2, id, created_at, created_at, created_at FROM inserted`,
        [orgId, endpoint.id],
      );
      await db.query(
        `INSERT INTO webhook_attempts (org_id, endpoint_id, delivery_id, event_uid, attempt, status_code, duration_ms, created_at)
         SELECT $1, $2, d.id, e.uid, 1, 500, 5, e.created_at FROM webhook_deliveries d JOIN events e ON e.org_id = d.org_id AND e.id = d.event_id WHERE d.org_id = $1`,
        [orgId, endpoint.id],
      );
      const snapshot = async () => ({
        events: await db.query(`SELECT id::text, uid, type, created_at::text FROM events WHERE org_id = $1 ORDER BY id`, [orgId]),
        deliveries: await db.query(`SELECT id::text, event_id::text, state, created_at::text FROM webhook_deliveries WHERE org_id = $1 ORDER BY id`, [orgId]),
        attempts: await db.query(`SELECT id::text, uid, delivery_id::text, created_at::text FROM webhook_attempts WHERE org_id = $1 ORDER BY id`, [orgId]),
      });
      const before = await snapshot();
      expect(before.events).toHaveLength(5);
      expect(before.deliveries).toHaveLength(5);
      expect(before.attempts).toHaveLength(5);

      expect((await migrate(db)).map((m) => m.version)).toContain(25);
      expect(await snapshot()).toEqual(before);
      const [{ relkind } = { relkind: '' }] = await db.query<{ relkind: string }>(`SELECT relkind::text FROM pg_class WHERE oid = 'events'::regclass`);
      expect(relkind).toBe('p');
      // Every delivery names its event's partition; new rows take ids after the old ones.
      const [{ mismatched } = { mismatched: -1 }] = await db.query<{ mismatched: number }>(
        `SELECT count(*)::int AS mismatched FROM webhook_deliveries d JOIN events e ON e.org_id = d.org_id AND e.id = d.event_id WHERE e.created_at <> d.event_created_at`,
      );
      expect(mismatched).toBe(0);
      await insertCreditLimits(db, orgId, [creditLimit()]);
      await publishAllEvents(db, orgId);
      const ids = await db.query<{ id: string }>('SELECT id::text AS id FROM events WHERE org_id = $1 ORDER BY id', [orgId]);
      expect(BigInt(ids.at(-1)!.id)).toBeGreaterThan(BigInt(before.events.at(-1)!.id as string));
    } finally {
      await db.close();
    }
  });
});
