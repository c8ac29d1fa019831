import { expect, it } from 'vitest';
import { eventsAfter } from '../../src/events/event-stream-reader.js';
import type { Queryable } from '../../src/store/store.js';
import { describeEachStore, distributedOnCitus } from '../helpers/stores.js';
import { createTenant } from '../helpers/tenants.js';

interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  Plans?: PlanNode[];
}

const nodesOf = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(nodesOf)];

describeEachStore('the event stream\'s read of the log', (store, kind) => {
  // Its ORDER BY named created_at, which the select list also names (the timestamp as text): PostgreSQL sorted by
  // that text, which no index holds, so each batch of a catch-up sorted every event after its position (a
  // stream over a log of 40,000 events read about 11,000 a second on a 2-vCPU machine, its statements ~45 ms each).
  it.skipIf(distributedOnCitus(kind))('reads the log in the order of its (org_id, created_at, id) index, without sorting it', async () => {
    const tenant = await createTenant(store(), 'Streamed', 'read');
    let captured: { sql: string; params: unknown[] } | undefined;
    const capture: Queryable = {
      query: async <Row>(sql: string, params?: readonly unknown[]) => {
        captured = { sql, params: [...(params ?? [])] };
        return [] as Row[];
      },
      exec: async () => {},
    };
    await eventsAfter(capture, tenant.org.id, { filters: [] } as unknown as Parameters<typeof eventsAfter>[2], { sortKey: '-infinity', rowId: '0' }, 500);
    const statement = captured!;
    const plan = await store().transaction(async (tx) => {
      // A sort is then the planner's last resort: taken only when no index gives the order.
      await tx.query('SET LOCAL enable_sort = off');
      const [row] = await tx.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] | string }>(`EXPLAIN (FORMAT JSON) ${statement.sql}`, statement.params);
      const text = row!['QUERY PLAN'];
      return (typeof text === 'string' ? (JSON.parse(text) as [{ Plan: PlanNode }]) : text)[0].Plan;
    });
    const nodes = nodesOf(plan);
    expect(nodes.map((node) => node['Node Type'])).not.toContain('Sort');
    // The log is partitioned by day (migration 025): the index of each day partition is a partition of events_created_idx.
    const partitionIndexes = await store().query<{ name: string }>(
      `SELECT c.relname::text AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'events_created_idx'::regclass`,
    );
    const created = new Set(['events_created_idx', ...partitionIndexes.map((index) => index.name)]);
    const scanned = nodes.flatMap((node) => (node['Index Name'] ? [node['Index Name']] : []));
    expect(scanned.length).toBeGreaterThan(0);
    expect(scanned.filter((name) => !created.has(name))).toEqual([]);
  });
});
