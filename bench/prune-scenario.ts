/**
 * `npm run bench -- --only eprune`: retention at volume (docs/storage.md
 * "Retention"). In a database of its own (`lending_eprune` on the bench's
 * server, dropped at the end), EPRUNE_EVENTS events (20 million by default)
 * of EPRUNE_DAYS days past and present, in day partitions, loaded by
 * INSERT … SELECT generate_series; and an unpartitioned copy of them with
 * the indexes the log had before migration 025. Then:
 *
 * - list p99 (`GET /api/events/` first page, and one filtered by type) through the list engine, on the
 *   unpartitioned copy and on the partitioned log;
 * - the oldest day dropped as the prune job drops it (its partitions of events, deliveries, attempts);
 * - the same day pruned from the unpartitioned copy as the row pruning before 025 did (batches of 1000
 *   rows per organization, oldest first), timed;
 * - list p99 again.
 *
 * Target: dropping a day ≤ 1 s. Its record goes to bench/results/. `EPRUNE_KEEP=1` keeps
 * the database afterwards (to EXPLAIN its lists); `EPRUNE_EVENTS`, `EPRUNE_DAYS` size it.
 */
import pg from 'pg';
import { dayOf, dropExpiredPartitions, ensureDayPartitions } from '../src/events/event-partitions.js';
import { events as eventsResource } from '../src/events/events-resource.js';
import { ListCache } from '../src/listing/list-cache.js';
import { listRecords } from '../src/listing/list-records.js';
import { parseListQuery } from '../src/listing/query-parser.js';
import { migrate } from '../src/store/migrate.js';
import { PostgresStore } from '../src/store/postgres-store.js';
import type { Store } from '../src/store/store.js';
import { percentile } from './burst-client.js';
import { writeBenchRecord, type MeasuredRow } from './results-record.js';

export const PRUNE_SCENARIO_ID = 'eprune';

const DAY_MS = 86_400_000;
const DATABASE = 'lending_eprune';
/** 20,000 events each at 20 million: the list's exact count stays one organization's, as it is for a tenant. */
const ORGANIZATIONS = 1000;
const TYPES = ['credit_limit.created', 'credit_limit.updated', 'ledger_entry.created', 'loan.created', 'entity.updated'];
const LIST_SAMPLES = 300;
const LIST_WARMUP = 20;
/** The row pruning before migration 025, on the unpartitioned copy: a batch of the organization's oldest events past the cutoff. */
const DELETE_BATCH = `WITH old AS (
    SELECT e.id FROM events_unpartitioned e WHERE e.org_id = $1 AND e.created_at < $2::timestamptz ORDER BY e.created_at LIMIT 1000
  ), pruned AS (
    DELETE FROM events_unpartitioned e WHERE e.org_id = $1 AND e.id IN (SELECT id FROM old) RETURNING e.id
  )
  SELECT count(*)::int AS events FROM pruned`;

export async function runPruneScenario(log: (line: string) => void): Promise<string[]> {
  const total = Number(process.env.EPRUNE_EVENTS ?? 20_000_000);
  const days = Number(process.env.EPRUNE_DAYS ?? 10);
  const retentionDays = 30;
  const server = process.env.BENCH_SERVER_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const admin = new pg.Client({ connectionString: server });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${DATABASE}`);
  await admin.query(`CREATE DATABASE ${DATABASE}`);
  const url = new URL(server);
  url.pathname = `/${DATABASE}`;
  const store = new PostgresStore(url.toString(), { poolSize: 4 });
  const lines: string[] = [];
  try {
    await migrate(store);
    const orgIds = (
      await store.query<{ id: string }>(
        `INSERT INTO organizations (uid, name) SELECT 'org_eprune_' || n, 'Prune ' || n FROM generate_series(1, ${ORGANIZATIONS}) AS n RETURNING id::text AS id`,
      )
    ).map((row) => row.id);
    // The oldest day is the one past the retention: days (retention + 1 − days + 1) … (retention + 1) ago.
    const now = new Date();
    const oldest = dayOf(new Date(now.getTime() - (retentionDays + 1) * DAY_MS));
    for (let day = 0; day < days; day += 1) await ensureDayPartitions(store, new Date(oldest.getTime() + day * DAY_MS), 0);
    const perDay = Math.floor(total / days);
    // Loaded without the log's indexes, which are then built as migration 025 defines them (read from the catalog).
    const indexes = await store.query<{ constraint_name: string | null; definition: string; name: string }>(
      `SELECT c.conname::text AS constraint_name, coalesce(pg_get_constraintdef(c.oid), pg_get_indexdef(i.indexrelid)) AS definition, i.indexrelid::regclass::text AS name
         FROM pg_index i LEFT JOIN pg_constraint c ON c.conindid = i.indexrelid AND c.conrelid = i.indrelid
        WHERE i.indrelid = 'events'::regclass`,
    );
    for (const index of indexes) {
      await store.exec(index.constraint_name ? `ALTER TABLE events DROP CONSTRAINT ${index.constraint_name}` : `DROP INDEX ${index.name}`);
    }
    log(`(eprune) loading ${(perDay * days).toLocaleString('en-US')} events over ${days} days, ${ORGANIZATIONS} organizations, into day partitions`);
    const loadStart = performance.now();
    for (let day = 0; day < days; day += 1) {
      const start = new Date(oldest.getTime() + day * DAY_MS).toISOString();
      await store.query(
        `INSERT INTO events (org_id, uid, type, object_uid, data_object, created_at)
         SELECT ($1::bigint[])[1 + g % ${ORGANIZATIONS}], 'evt_' || $6::text || lpad(g::text, 24, '0'), ($3::text[])[1 + (g / ${ORGANIZATIONS}) % ${TYPES.length}], 'cl_' || (g % 100000),
                '{"uid": "cl_1", "capacity": "100.00", "outstanding": "12.00", "currency": "USD", "rate": "0.0500"}'::jsonb,
                $2::timestamptz + (g / ${ORGANIZATIONS}) * ($4::float8 * interval '1 microsecond')
           FROM generate_series(0, $5::int - 1) AS g`,
        [orgIds, start, TYPES, (DAY_MS * 1000) / (perDay / ORGANIZATIONS) - 1, perDay, String(day).padStart(8, '0')],
      );
      log(`(eprune) day ${day + 1}/${days} loaded (${Math.round((performance.now() - loadStart) / 1000)} s)`);
    }
    log('(eprune) building the indexes');
    for (const index of indexes) {
      // pg_get_indexdef says `ON ONLY events`: an index of the parent alone, never valid, none on the partitions.
      await store.exec(index.constraint_name ? `ALTER TABLE events ADD CONSTRAINT ${index.constraint_name} ${index.definition}` : index.definition.replace(' ON ONLY ', ' ON '));
    }
    // Vacuumed, as autovacuum leaves an insert-only table: the counts read the indexes alone (visibility map set).
    await store.exec('VACUUM (ANALYZE) events');
    log('(eprune) building the unpartitioned copy (the log before migration 025)');
    await store.exec(
      `CREATE TABLE events_unpartitioned AS SELECT * FROM events;
       ALTER TABLE events_unpartitioned ADD PRIMARY KEY (id, org_id);
       CREATE UNIQUE INDEX ON events_unpartitioned (org_id, uid);
       CREATE UNIQUE INDEX ON events_unpartitioned (org_id, created_at);
       CREATE INDEX ON events_unpartitioned (org_id, created_at, id);
       CREATE INDEX ON events_unpartitioned (org_id, type, created_at, id);
       CREATE INDEX ON events_unpartitioned (org_id, object_uid, created_at, id)`,
    );
    await store.exec('VACUUM (ANALYZE) events_unpartitioned');
    log(`(eprune) loaded in ${Math.round((performance.now() - loadStart) / 1000)} s`);

    const listUnpartitioned = await listLatency(store, orgIds[0]!, 'events_unpartitioned');
    const listBefore = await listLatency(store, orgIds[0]!);
    const dropStart = performance.now();
    const dropped = await dropExpiredPartitions(store, retentionDays, now);
    const dropMs = performance.now() - dropStart;
    const cutoff = new Date(oldest.getTime() + DAY_MS).toISOString();
    const deleteStart = performance.now();
    let deleted = 0;
    for (const orgId of orgIds) {
      for (;;) {
        const [row] = await store.query<{ events: number }>(DELETE_BATCH, [orgId, cutoff]);
        deleted += Number(row?.events ?? 0);
        if (Number(row?.events ?? 0) < 1000) break;
      }
    }
    const deleteMs = performance.now() - deleteStart;
    const listAfter = await listLatency(store, orgIds[0]!);

    lines.push(`eprune: ${(perDay * days).toLocaleString('en-US')} events over ${days} days; one day = ${perDay.toLocaleString('en-US')} events`);
    lines.push(`  drop of the day's partitions (${dropped.dropped.join(', ')}): ${dropMs.toFixed(0)} ms  (target ≤ 1000 ms: ${dropMs <= 1000 ? 'met' : 'MISSED'})`);
    lines.push(`  DELETE of the same day from the unpartitioned copy, 1000 rows a statement: ${deleted.toLocaleString('en-US')} rows in ${(deleteMs / 1000).toFixed(1)} s`);
    for (const [name, unpartitioned, before, after] of [
      ['GET /api/events/ first page', listUnpartitioned.first, listBefore.first, listAfter.first],
      ['GET /api/events/?type=ledger_entry.created', listUnpartitioned.filtered, listBefore.filtered, listAfter.filtered],
    ] as const) {
      lines.push(
        `  ${name} (one organization's ${(perDay * days) / ORGANIZATIONS} events): p50 ${unpartitioned.p50.toFixed(2)} / ${before.p50.toFixed(2)} / ${after.p50.toFixed(2)} ms, ` +
          `p99 ${unpartitioned.p99.toFixed(2)} / ${before.p99.toFixed(2)} / ${after.p99.toFixed(2)} ms (unpartitioned / partitioned before / after the drop)`,
      );
    }
    const row = (id: string, title: string, ms: number): MeasuredRow => ({ id, title, connections: 1, service: { perSecond: 1000 / ms, p50: ms, p99: ms, failures: 0 } });
    const list = (id: string, title: string, figures: Latency): MeasuredRow => ({
      id,
      title,
      connections: 1,
      service: { perSecond: 1000 / figures.p50, p50: figures.p50, p99: figures.p99, failures: 0 },
    });
    const rows: MeasuredRow[] = [
      row('eprune', `eprune: drop one day (${perDay} events) of ${perDay * days}`, dropMs),
      row('eprune-delete', `eprune: DELETE of the same day, unpartitioned, 1000 a statement`, deleteMs),
      list('eprune-list-unpartitioned', 'eprune: GET /api/events/ first page, the unpartitioned copy', listUnpartitioned.first),
      list('eprune-type-unpartitioned', 'eprune: GET /api/events/?type=… the unpartitioned copy', listUnpartitioned.filtered),
      list('eprune-list-before', 'eprune: GET /api/events/ first page, before the drop', listBefore.first),
      list('eprune-list-after', 'eprune: GET /api/events/ first page, after the drop', listAfter.first),
      list('eprune-type-before', 'eprune: GET /api/events/?type=… before the drop', listBefore.filtered),
      list('eprune-type-after', 'eprune: GET /api/events/?type=… after the drop', listAfter.filtered),
    ];
    lines.push(`record of this run: ${await writeBenchRecord({ rows, database: `PostgreSQL (${DATABASE}, dropped after the run)` })}`);
  } finally {
    await store.close();
    if (!process.env.EPRUNE_KEEP) await admin.query(`DROP DATABASE IF EXISTS ${DATABASE}`);
    await admin.end();
  }
  return lines;
}

interface Latency {
  p50: number;
  p99: number;
}

async function listLatency(store: Store, orgId: string, table = 'events'): Promise<{ first: Latency; filtered: Latency }> {
  const resource = { ...eventsResource, table };
  const measure = async (raw: string): Promise<Latency> => {
    const cache = new ListCache({ entries: 100, anchorStride: 1000, maxAnchors: 100 });
    const samples: number[] = [];
    // Unmeasured first calls: the first table measured would otherwise pay for a cache the load left cold.
    for (let i = 0; i < LIST_WARMUP; i += 1) await listRecords(store, resource, orgId, parseListQuery(resource, raw), cache);
    for (let i = 0; i < LIST_SAMPLES; i += 1) {
      const start = performance.now();
      await listRecords(store, resource, orgId, parseListQuery(resource, raw), cache);
      samples.push(performance.now() - start);
    }
    return { p50: percentile(samples, 50), p99: percentile(samples, 99) };
  };
  return { first: await measure(''), filtered: await measure('type=ledger_entry.created') };
}
