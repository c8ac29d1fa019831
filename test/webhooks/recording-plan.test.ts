import { expect, it } from 'vitest';
import { ORGANIZATIONS_WITH_DUE_WORK, organizationsWithDueDeliveries } from '../../src/webhooks/delivery-claims.js';
import { RECORD_ATTEMPT, RECORD_DELIVERED } from '../../src/webhooks/delivery-record.js';
import { describeEachStore, distributedOnCitus } from '../helpers/stores.js';
import { createTenant } from '../helpers/tenants.js';
import { insertEndpoint } from './deliverer-helpers.js';

const BACKLOG = 5000;
/** When the deliveries' events entered the log (their partition key): now, as the publication writes them. */
const EVENTS_AT = new Date().toISOString();

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Index Cond'?: string;
  Plans?: PlanNode[];
}

/** A delivery by its id, or by its event's: a probe per recorded delivery. */
const BY_KEY = new Set(['webhook_deliveries_pkey', 'webhook_deliveries_event_idx']);

/** A day partition's index (migration 025) by the name of the table's index it is a partition of. */
function parentIndex(name: string | undefined): string | undefined {
  const partitionIndex = name === undefined ? null : /^webhook_deliveries_(?:p\d{8}|default)_(.*)$/.exec(name);
  if (!partitionIndex) return name;
  return partitionIndex[1] === 'org_id_event_id_idx' ? 'webhook_deliveries_event_idx' : `webhook_deliveries_${partitionIndex[1]}`;
}

/** How the plan reads webhook_deliveries: the indexes of it that it scans, and 'Seq Scan' if it reads the table (or a partition) whole. */
function deliveryScans(node: PlanNode): string[] {
  const name = parentIndex(node['Index Name']);
  // (org_id, event_id) read by org_id alone is a scan of the organization's deliveries.
  const byOrgAlone = name === 'webhook_deliveries_event_idx' && !node['Index Cond']?.includes('event_id');
  const index = name?.startsWith('webhook_deliveries') ? [byOrgAlone ? `${name} by org_id alone` : name] : [];
  const whole = node['Node Type'] === 'Seq Scan' && node['Relation Name']?.startsWith('webhook_deliveries') ? ['Seq Scan'] : [];
  return [...index, ...whole, ...(node.Plans ?? []).flatMap(deliveryScans)];
}

describeEachStore('recording attempts behind a backlog', (store, kind) => {
  // A recording must cost the same behind 5,000 pending deliveries as behind none, even when the
  // statistics were taken before the backlog built up (autovacuum had not run yet). Without the backlog
  // in the statistics the planner believed the organization had no pending delivery and read them all.
  it.skipIf(distributedOnCitus(kind))('reads each recorded delivery by its key, not the organization\'s pending deliveries', async () => {
    const tenant = await createTenant(store(), 'Backlogged', 'write');
    const orgId = tenant.org.id;
    const endpoint = await insertEndpoint(store(), orgId, 'http://127.0.0.1:9/');
    const insert = (state: string, firstEvent: number) =>
      store().query<{ ids: string[]; event_ids: string[] }>(
        `WITH made AS (
           INSERT INTO webhook_deliveries (org_id, endpoint_id, event_id, event_created_at, state, attempts, next_attempt_at, created_at, updated_at)
           SELECT $1, $2, n, $6::timestamptz, $4, CASE WHEN $4 = 'pending' THEN 0 ELSE 1 END, now() - interval '1 minute', now(), now()
             FROM generate_series($3::int, $3::int + $5::int - 1) AS n
           RETURNING id, event_id
         ) SELECT array_agg(id::text ORDER BY id) AS ids, array_agg(event_id::text ORDER BY id) AS event_ids FROM made`,
        [orgId, endpoint.id, firstEvent, state, BACKLOG, EVENTS_AT],
      );
    // The organization's history, then the statistics, then a backlog they do not know of.
    await insert('delivered', 1);
    await store().exec('ANALYZE webhook_deliveries');
    const [{ ids, event_ids: eventIds } = { ids: [] as string[], event_ids: [] as string[] }] = await insert('pending', BACKLOG + 1);
    expect(ids).toHaveLength(BACKLOG);
    const recorded = ids.slice(0, 25);
    const recordedEvents = eventIds.slice(0, 25);

    const planOf = async (sql: string, params: unknown[]) => {
      const [row] = await store().query<{ 'QUERY PLAN': [{ Plan: PlanNode }] | string }>(`EXPLAIN (FORMAT JSON) ${sql}`, params);
      const plan = row!['QUERY PLAN'];
      return deliveryScans((typeof plan === 'string' ? (JSON.parse(plan) as [{ Plan: PlanNode }]) : plan)[0].Plan);
    };
    const n = recorded.length;
    const successes = await planOf(RECORD_DELIVERED, [
      orgId,
      Array(n).fill(endpoint.id),
      recorded,
      recorded.map((id) => `evt_${id}`),
      Array(n).fill(1),
      Array(n).fill(204),
      Array(n).fill(3),
      Array(n).fill(null),
      recordedEvents,
      Array(n).fill(EVENTS_AT),
      EVENTS_AT,
      EVENTS_AT,
    ]);
    const failure = await planOf(RECORD_ATTEMPT, [
      orgId,
      endpoint.id,
      recorded[0],
      'node-a',
      0,
      'evt_1',
      new Date().toISOString(),
      1,
      500,
      3,
      'the receiver answered 500',
      null,
      recordedEvents[0],
      EVENTS_AT,
    ]);

    for (const scans of [successes, failure]) {
      expect(scans.length).toBeGreaterThan(0);
      expect(scans.filter((scan) => !BY_KEY.has(scan))).toEqual([]);
    }
  });
});

describeEachStore('finding the organizations with due deliveries behind a backlog', (store, kind) => {
  // Asked by every node every 500 ms: read from the deliveries, a million pending to a black-holed endpoint
  // cost every round 0.9 s, and every other organization waited behind it.
  it.skipIf(distributedOnCitus(kind))('probes each enabled endpoint for its earliest due delivery, and finds only organizations a claim would serve', async () => {
    const backlogged = await createTenant(store(), 'Backlogged', 'write');
    const quiet = await createTenant(store(), 'Quiet', 'write');
    const blackHole = await insertEndpoint(store(), backlogged.org.id, 'http://127.0.0.1:9/');
    const later = await insertEndpoint(store(), quiet.org.id, 'http://127.0.0.1:9/later');
    const disabled = await insertEndpoint(store(), quiet.org.id, 'http://127.0.0.1:9/off');
    await store().query('UPDATE webhook_endpoints SET disabled = true WHERE org_id = $1 AND id = $2', [quiet.org.id, disabled.id]);
    const pending = (orgId: string, endpointId: string, count: number, due: string) =>
      store().query(
        `INSERT INTO webhook_deliveries (org_id, endpoint_id, event_id, event_created_at, next_attempt_at, created_at, updated_at)
         SELECT $1, $2, n, now(), now() + $4::interval, now(), now() FROM generate_series(1, $3::int) AS n`,
        [orgId, endpointId, count, due],
      );
    await pending(backlogged.org.id, blackHole.id, BACKLOG, '-1 minute');
    // The quiet organization's deliveries are a retry not yet due, and one to a disabled endpoint: nothing to claim.
    await pending(quiet.org.id, later.id, 1, '1 hour');
    await pending(quiet.org.id, disabled.id, 1, '-1 minute');
    await store().exec('ANALYZE webhook_deliveries');

    const found = await organizationsWithDueDeliveries(store());
    expect(found).toContain(backlogged.org.id);
    expect(found).not.toContain(quiet.org.id);
    // In id order, from after the one given.
    expect(await organizationsWithDueDeliveries(store(), 1000, backlogged.org.id)).not.toContain(backlogged.org.id);
    expect(await organizationsWithDueDeliveries(store(), 1000, String(BigInt(backlogged.org.id) - 1n))).toContain(backlogged.org.id);

    const [row] = await store().query<{ 'QUERY PLAN': [{ Plan: PlanNode }] | string }>(`EXPLAIN (FORMAT JSON) ${ORGANIZATIONS_WITH_DUE_WORK}`, [1000, '-1']);
    const plan = row!['QUERY PLAN'];
    const probes = indexScans((typeof plan === 'string' ? (JSON.parse(plan) as [{ Plan: PlanNode }]) : plan)[0].Plan);
    expect(probes.length).toBeGreaterThan(0);
    for (const probe of probes) expect(probe, 'a scan of webhook_deliveries by one endpoint, under a LIMIT 1').toMatch(/endpoint_id = w\.id.*limit 1$/);
  });
});

/**
 * Each read of webhook_deliveries: its index, its condition, and whether a
 * Limit 1 sits right above it (or above the Merge Append of its day partitions:
 * migration 025).
 */
function indexScans(node: PlanNode, underLimit = false): string[] {
  const readsDeliveries = node['Relation Name']?.startsWith('webhook_deliveries') || node['Index Name']?.startsWith('webhook_deliveries');
  const own = readsDeliveries ? [`${node['Node Type']} ${node['Index Name'] ?? ''} ${node['Index Cond'] ?? ''}${underLimit ? ' limit 1' : ''}`] : [];
  const limitOne = node['Node Type'] === 'Limit' || (underLimit && node['Node Type'] === 'Merge Append');
  return [...own, ...(node.Plans ?? []).flatMap((child) => indexScans(child, limitOne))];
}
