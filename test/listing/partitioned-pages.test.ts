import { expect, it } from 'vitest';
import { dayOf, ensureDayPartitions } from '../../src/events/event-partitions.js';
import { events } from '../../src/events/events-resource.js';
import { ListCache } from '../../src/listing/list-cache.js';
import { listCursorPage } from '../../src/listing/list-cursor-page.js';
import { CursorSecret } from '../../src/listing/cursor-secret.js';
import { listRecords } from '../../src/listing/list-records.js';
import { parseListQuery } from '../../src/listing/query-parser.js';
import type { Queryable } from '../../src/store/store.js';
import { describeEachStore } from '../helpers/stores.js';
import { createTenant } from '../helpers/tenants.js';

const DAY_MS = 86_400_000;
const DAYS = 6;
const PER_DAY = 1000;

interface PlanNode {
  readonly 'Relation Name'?: string;
  readonly Alias?: string;
  readonly 'Actual Loops'?: number;
  readonly Plans?: readonly PlanNode[];
}

/** Every plan node that read a partition of the outer `events t` (the page's rows fetched again), with its loops. */
function outerReads(node: PlanNode): number[] {
  const own = /^t(_\d+)?$/.test(node.Alias ?? '') && (node['Relation Name'] ?? '').startsWith('events') ? [node['Actual Loops'] ?? 0] : [];
  return [...own, ...(node.Plans ?? []).flatMap(outerReads)];
}

describeEachStore('lists of a partitioned table', (store) => {
  // The page's ids are found first, then its rows read again: by id alone, each row was looked for in every day's
  // partition (13 index probes a row with 10 days kept); by id and created_at, in its own (run-time pruning).
  it.each([
    ['a page by offset', ''],
    ['a page of one type', 'type=credit_limit.created'],
    ['a cursor page', 'order_by=created_at&cursor='],
  ])('%s reads each of its events in its own partition only', async (_name, rawQuery) => {
    const tenant = await createTenant(store(), 'Partitioned pages');
    const today = dayOf(new Date());
    for (let day = 0; day < DAYS; day += 1) await ensureDayPartitions(store(), new Date(today.getTime() - day * DAY_MS), 0);
    // A thousand events a day over six days: a page's ten are of one or two days.
    await store().query(
      `INSERT INTO events (org_id, uid, type, object_uid, data_object, created_at)
       SELECT $1, 'evt_part_' || n, 'credit_limit.created', 'cl_' || n, '{}'::jsonb,
              $2::timestamptz - (n / ${PER_DAY}) * interval '1 day' + (n % ${PER_DAY}) * interval '1 second'
         FROM generate_series(0, ${PER_DAY * DAYS - 1}) AS n`,
      [tenant.org.id, new Date(today.getTime() + 3600_000).toISOString()],
    );
    await store().exec('ANALYZE events');
    const statements: { sql: string; params: readonly unknown[] }[] = [];
    const recording: Queryable = {
      query: (sql, params, options) => {
        statements.push({ sql, params: params ?? [] });
        return store().query(sql, params, options);
      },
      exec: (sql) => store().exec(sql),
    };
    const query = parseListQuery(events, rawQuery);
    const page = rawQuery.includes('cursor=')
      ? await listCursorPage(recording, events, tenant.org.id, query, new CursorSecret())
      : await listRecords(recording, events, tenant.org.id, query, new ListCache({ entries: 10, anchorStride: 1000, maxAnchors: 10 }));
    expect(page.items).toHaveLength(10);

    const pageStatements = statements.filter((statement) => /\) page USING/.test(statement.sql));
    expect(pageStatements.length).toBeGreaterThan(0);
    for (const statement of pageStatements) {
      // At volume the planner fetches a page's rows by a nested loop; on these thousands it may hash them: made to loop here.
      const [explained] = await store().transaction(async (tx) => {
        await tx.exec('SET LOCAL enable_hashjoin = off; SET LOCAL enable_mergejoin = off');
        return tx.query<{ 'QUERY PLAN': unknown }>(`EXPLAIN (ANALYZE, FORMAT JSON) ${statement.sql}`, statement.params);
      });
      const plan = (typeof explained!['QUERY PLAN'] === 'string' ? JSON.parse(explained!['QUERY PLAN']) : explained!['QUERY PLAN']) as { Plan: PlanNode }[];
      const loops = outerReads(plan[0]!.Plan);
      // Every day's partition planned; only the page's day (or two) read, once a row (11: a cursor page looks one ahead).
      expect(loops.length).toBeGreaterThanOrEqual(DAYS);
      expect(loops.filter((n) => n > 0).length).toBeLessThanOrEqual(2);
      expect(loops.reduce((sum, n) => sum + n, 0)).toBeLessThanOrEqual(11);
    }
  });
});
