import { expect, it } from 'vitest';
import { pruneEvents } from '../../src/events/event-prune.js';
import { publishAllEvents } from '../../src/events/publish-events.js';
import { creditLimit, insertCreditLimits } from '../helpers/records.js';
import { describeEachStore } from '../helpers/stores.js';
import { createTenant } from '../helpers/tenants.js';
import { insertEndpoint } from '../webhooks/deliverer-helpers.js';

describeEachStore('event retention', (store) => {
  it('prunes events older than the retention, in batches, with their finished deliveries and old attempts; keeps the rest', async () => {
    const tenant = await createTenant(store(), 'Retention', 'write');
    const orgId = tenant.org.id;
    const endpoint = await insertEndpoint(store(), orgId, 'http://127.0.0.1:9/');
    await insertCreditLimits(store(), orgId, Array.from({ length: 7 }, () => creditLimit()));
    await publishAllEvents(store(), orgId);
    const events = await store().query<{ id: string; uid: string }>('SELECT id::text AS id, uid FROM events WHERE org_id = $1 ORDER BY id', [orgId]);
    expect(events).toHaveLength(7);
    // Five are 31 days old: four delivered, one still pending (kept until it is finished); two are recent.
    const old = events.slice(0, 5).map((event) => event.id);
    await store().query(`UPDATE events SET created_at = (created_at AT TIME ZONE 'UTC' - interval '31 days') AT TIME ZONE 'UTC' WHERE org_id = $1 AND id = ANY ($2::bigint[])`, [orgId, old]);
    // A delivery names its event by (event_id, event_created_at).
    await store().query(
      `UPDATE webhook_deliveries d SET event_created_at = e.created_at FROM events e WHERE d.org_id = $1 AND e.org_id = $1 AND e.id = d.event_id AND e.id = ANY ($2::bigint[])`,
      [orgId, old],
    );
    await store().query(`UPDATE webhook_deliveries SET state = 'delivered' WHERE org_id = $1 AND event_id = ANY ($2::bigint[])`, [orgId, old.slice(0, 4)]);
    for (const [index, event] of events.entries()) {
      await store().query(
        `INSERT INTO webhook_attempts (org_id, endpoint_id, delivery_id, event_uid, attempt, status_code, duration_ms, created_at)
         SELECT $1, $2, d.id, $3, 1, 200, 5, now() - $4::int * interval '1 day' FROM webhook_deliveries d WHERE d.org_id = $1 AND d.event_id = $5`,
        [orgId, endpoint.id, event.uid, index < 4 ? 31 : 0, event.id],
      );
    }
    const counts = await pruneEvents(store(), 30, 3);
    expect(counts).toMatchObject({ events: 4, deliveries: 4, attempts: 4 });
    const left = await store().query<{ uid: string }>('SELECT uid FROM events WHERE org_id = $1 ORDER BY id', [orgId]);
    expect(left.map((event) => event.uid)).toEqual(events.slice(4).map((event) => event.uid));
    const [{ deliveries, attempts } = { deliveries: 0, attempts: 0 }] = await store().query<{ deliveries: number; attempts: number }>(
      `SELECT (SELECT count(*) FROM webhook_deliveries WHERE org_id = $1)::int AS deliveries, (SELECT count(*) FROM webhook_attempts WHERE org_id = $1)::int AS attempts`,
      [orgId],
    );
    expect({ deliveries, attempts }).toEqual({ deliveries: 3, attempts: 3 });
    expect(await pruneEvents(store(), 30, 3)).toMatchObject({ events: 0, deliveries: 0, attempts: 0 });
  });
});

describeEachStore('endpoint health retention', (store) => {
  it("prunes health buckets older than the retention, but keeps each endpoint's newest bucket and newest success", async () => {
    const tenant = await createTenant(store(), 'Health retention', 'write');
    const orgId = tenant.org.id;
    const endpoint = await insertEndpoint(store(), orgId, 'http://127.0.0.1:9/');
    // The prune job visits the organizations that have published events.
    await insertCreditLimits(store(), orgId, [creditLimit()]);
    await publishAllEvents(store(), orgId);
    const bucket = async (daysAgo: number, succeeded: number, failed: number): Promise<void> => {
      await store().query(
        `INSERT INTO webhook_endpoint_stats (org_id, endpoint_id, bucket, succeeded, failed, last_attempt_at, last_success_at)
         VALUES ($1, $2, date_trunc('hour', now()) - $3::int * interval '1 day', $4, $5,
                 date_trunc('hour', now()) - $3::int * interval '1 day', CASE WHEN $4 > 0 THEN date_trunc('hour', now()) - $3::int * interval '1 day' END)`,
        [orgId, endpoint.id, daysAgo, succeeded, failed],
      );
    };
    // Successes 40 and 35 days ago, failures 34 and 31 days ago: every bucket is past a 30-day retention.
    await bucket(40, 3, 0);
    await bucket(35, 1, 0);
    await bucket(34, 0, 2);
    await bucket(31, 0, 5);
    const health = async (): Promise<{ last_attempt_at: string; last_success_at: string }> => {
      const [row] = await store().query<{ last_attempt_at: string; last_success_at: string }>(
        `SELECT max(last_attempt_at)::text AS last_attempt_at, max(last_success_at)::text AS last_success_at FROM webhook_endpoint_stats WHERE org_id = $1`,
        [orgId],
      );
      return row!;
    };
    const before = await health();
    const counts = await pruneEvents(store(), 30, 1);
    expect(counts.healthBuckets).toBe(2);
    const days = await store().query<{ days: number }>(
      `SELECT round(extract(epoch FROM date_trunc('hour', now()) - bucket) / 86400)::int AS days FROM webhook_endpoint_stats WHERE org_id = $1 ORDER BY bucket`,
      [orgId],
    );
    expect(days.map((row) => row.days)).toEqual([35, 31]);
    expect(await health()).toEqual(before);
    expect((await pruneEvents(store(), 30, 1)).healthBuckets).toBe(0);
  });
});
