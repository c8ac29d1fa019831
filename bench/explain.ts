/**
 * `npm run explain`: EXPLAIN (ANALYZE, BUFFERS) of every documented query
 * shape — each filter alone, each order_by of both resources, each with and
 * without `entity`, page and count queries — against the benchmark dataset
 * (load it first with `npm run bench`). Exits non-zero if any plan contains a
 * sequential scan. Prints markdown, or writes it to a file: docs/query-plans.md
 * is this command's output, regenerated, never edited by hand.
 *
 *   npm run explain -- [--scale 1] [--seed 42] [--page 50000] [--write docs/query-plans.md]
 */
import { writeFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { requireOrganization } from '../src/organizations/organizations.js';
import { DEFAULT_LIST_CACHE } from '../src/listing/list-cache.js';
import { countIsRemembered, pagesAreAnchored } from '../src/listing/list-records.js';
import { PAGE_SIZE, parseListQuery, type ListQuery } from '../src/listing/query-parser.js';
import type { ResourceDefinition } from '../src/listing/resource-definition.js';
import { buildListSql, type ListSql, type SqlQuery } from '../src/listing/sql.js';
import { RESOURCES } from '../src/resources/index.js';
import { PostgresStore } from '../src/store/postgres-store.js';
import { creditLimitAt, formatMicros, organizations, paymentMethodAt, REFERENCE_TIME_MS, type DatasetSpec } from './dataset.js';
import { benchDatabaseUrl } from './database.js';
import { thisMachine, type Machine } from './results-record.js';
import { scenarios } from './scenarios.js';

/** How docs/query-plans.md says it was generated (test/docs checks it is there). */
const GENERATED_MARK = 'Generated';

const { values: args } = parseArgs({
  options: {
    scale: { type: 'string', default: '1' },
    seed: { type: 'string', default: '42' },
    page: { type: 'string', default: '50000' },
    write: { type: 'string' },
  },
});
const spec: DatasetSpec = { seed: Number(args.seed), scale: Number(args.scale) };

interface Shape {
  readonly resource: ResourceDefinition;
  readonly query: string;
  /** Set for the benchmark's scenarios. */
  readonly scenario?: string;
}

/** Every query shape the API documents, with values that exist in the dataset. */
function shapes(filled: readonly ResourceDefinition[]): Shape[] {
  const [largest] = organizations(spec);
  if (!largest) throw new Error('no organizations');
  const dayAgo = formatMicros((REFERENCE_TIME_MS - 86_400_000) * 1000);
  const monthAgo = formatMicros((REFERENCE_TIME_MS - 30 * 86_400_000) * 1000);
  const sampleValue: Record<string, (resource: ResourceDefinition) => string> = {
    created_from: () => dayAgo,
    created_to: () => monthAgo,
    updated_from: () => dayAgo,
    updated_to: () => monthAgo,
    entity: (resource) =>
      resource.path === 'methods' ? paymentMethodAt(spec, largest, 7).entity : creditLimitAt(spec, largest, 7).entity,
    currency: () => 'USD',
  };
  const value = (resource: ResourceDefinition, param: string) => {
    const make = sampleValue[param];
    if (!make) throw new Error(`no sample value for ${param}: add one`);
    return encodeURIComponent(make(resource));
  };
  const result: Shape[] = [];
  // The benchmark's scenarios first, exactly as `npm run bench` asks them.
  for (const scenario of scenarios(spec, largest)) {
    const resource = RESOURCES.find((candidate) => candidate.path === scenario.path);
    if (resource) result.push({ resource, query: scenario.nextQuery(), scenario: `(${scenario.id}) ${scenario.title}` });
  }
  for (const resource of filled) {
    const entity = `entity=${value(resource, 'entity')}`;
    result.push({ resource, query: '' }, { resource, query: `page=${args.page}` });
    for (const filter of resource.filters) {
      const alone = `${filter.param}=${value(resource, filter.param)}`;
      result.push({ resource, query: alone });
      if (filter.param !== 'entity') result.push({ resource, query: `${entity}&${alone}` });
    }
    for (const field of resource.orderings) {
      for (const orderBy of [field, `-${field}`]) {
        result.push({ resource, query: `order_by=${orderBy}` }, { resource, query: `${entity}&order_by=${orderBy}` });
      }
    }
  }
  return result;
}

/**
 * What the service issues for a query. Lists whose count is remembered per
 * table version (see ListCache): on the first request, the count with the
 * version (and, for a deep page, the walk that finds its anchor); while the
 * version holds, one statement: the page after its anchor, with the version.
 * Other lists: count and page in one statement up to page 100, count then
 * page beyond.
 */
async function statementsOf(store: PostgresStore, resource: ResourceDefinition, query: ListQuery, sql: ListSql): Promise<[string, SqlQuery][]> {
  const versioned = sql.versioned;
  if (!versioned || !countIsRemembered(resource, query)) {
    return query.page <= 100 ? [['count + page', sql.combined]] : [['count', sql.count], ['page', sql.page]];
  }
  const offset = (query.page - 1) * PAGE_SIZE;
  const stride = DEFAULT_LIST_CACHE.anchorStride;
  if (offset < stride || !pagesAreAnchored(resource, query)) {
    const first: [string, SqlQuery] = query.page <= 100 ? ['first request: count + page + version', versioned.combined] : ['first request: count + version', versioned.count];
    return [first, ['while the version holds: page + version', versioned.pageAfter(undefined, offset)]];
  }
  const base = Math.floor(offset / stride) * stride;
  const walk = versioned.anchorWalk(undefined, base, stride);
  const walked = await store.query<{ n: string; sort_key: string; row_id: string }>(walk.text, walk.values);
  const last = walked.at(-1);
  if (!last) throw new Error('the anchor walk found no rows');
  const anchor = { offset: base, sortKey: last.sort_key, rowId: last.row_id };
  return [
    ['first request: count + version', versioned.count],
    ['first request: the walk that remembers an anchor every ' + stride.toLocaleString('en-US') + ' rows', walk],
    [`while the version holds: page ${query.page.toLocaleString('en-US')} = ${offset - base} rows after the anchor at row ${base.toLocaleString('en-US')}`, versioned.pageAfter(anchor, offset - base)],
  ];
}

async function main(): Promise<void> {
  const store = new PostgresStore(await benchDatabaseUrl(), { poolSize: 1 });
  const sequentialScans: string[] = [];
  const out: string[] = [];
  try {
    const [largest] = organizations(spec);
    const org = await requireOrganization(store, largest?.uid ?? '');
    const [sizes] = await store.query<{ methods: string; limits: string; version: string }>(
      `SELECT (SELECT row_count FROM row_counts WHERE org_id = $1 AND table_name = 'payment_methods')::text AS methods,
              (SELECT row_count FROM row_counts WHERE org_id = $1 AND table_name = 'credit_limits')::text AS limits,
              current_setting('server_version') AS version`,
      [org.id],
    );
    const machine = thisMachine(`PostgreSQL ${sizes?.version}`);
    const { filled, empty } = await collectionsWithRecords(store, org.id);
    out.push(...header(org.uid, sizes, machine, empty));
    const table: string[] = ['## Every other shape', '', '| request | index scanned (besides primary keys) | execution: first request / while the version holds |', '|---|---|---|'];
    out.push('## The benchmark\'s scenarios', '');
    for (const shape of shapes(filled)) {
      const query = parseListQuery(shape.resource, shape.query);
      const sql = buildListSql(shape.resource, org.id, query);
      const title = `GET /api/${shape.resource.path}/${shape.query ? `?${decodeURIComponent(shape.query)}` : ''}`;
      const plans: [string, string][] = [];
      for (const [kind, statement] of await statementsOf(store, shape.resource, query, sql)) {
        const plan = await explain(store, statement);
        if (/Seq Scan/.test(plan)) sequentialScans.push(`${title} (${kind})`);
        plans.push([kind, plan]);
      }
      if (shape.scenario) {
        out.push(`### ${shape.scenario}: \`${title}\``, '', '```');
        for (const [kind, plan] of plans) out.push(`-- ${kind}`, ...keyLines(plan));
        out.push('```', '');
      } else {
        const indexes = [...new Set(plans.flatMap(([, plan]) => scannedIndexes(plan)))];
        const times = plans.map(([, plan]) => /Execution Time: ([\d.]+) ms/.exec(plan)?.[1] ?? '?');
        table.push(`| \`${title}\` | ${indexes.join(', ') || '—'} | ${times.join(' / ')} ms |`);
      }
    }
    out.push(...table, '');
  } finally {
    await store.close();
  }
  out.push(
    sequentialScans.length === 0
      ? 'No plan contains a sequential scan.'
      : `Sequential scans in ${sequentialScans.length} plan(s):\n${sequentialScans.map((s) => `- ${s}`).join('\n')}`,
  );
  const markdown = `${out.join('\n')}\n`;
  if (args.write) {
    await writeFile(args.write, markdown);
    process.stderr.write(`explain: wrote ${args.write}\n`);
  } else {
    process.stdout.write(markdown);
  }
  if (sequentialScans.length > 0) process.exitCode = 1;
}

/**
 * Top-level collections (a nested one's statements need a parent record) that hold records of the
 * organization: a plan on an empty table says nothing about the one a filled table gets.
 */
async function collectionsWithRecords(store: PostgresStore, orgId: string): Promise<{ filled: ResourceDefinition[]; empty: ResourceDefinition[] }> {
  const filled: ResourceDefinition[] = [];
  const empty: ResourceDefinition[] = [];
  for (const resource of RESOURCES.filter((candidate) => !candidate.parent)) {
    const [row] = await store.query<{ any: boolean }>(`SELECT EXISTS (SELECT 1 FROM ${resource.table} WHERE org_id = $1) AS any`, [orgId]);
    (row?.any ? filled : empty).push(resource);
  }
  return { filled, empty };
}

function header(orgUid: string, sizes: { methods: string; limits: string } | undefined, machine: Machine, empty: readonly ResourceDefinition[]): string[] {
  const command = `npm run explain -- --scale ${spec.scale} --seed ${spec.seed} --page ${args.page}${args.write ? ` --write ${args.write}` : ''}`;
  return [
    '# Query plans',
    '',
    `${GENERATED_MARK} by \`${command}\` on ${new Date().toISOString().slice(0, 10)} — do not edit by hand; run it again.`,
    `Machine: ${machine.cpus} × ${machine.model}, ${((machine.memoryMiB ?? 0) / 1024).toFixed(0)} GiB, Node ${machine.node}, ${machine.database}.`,
    `Dataset: \`npm run bench -- --scale ${spec.scale} --seed ${spec.seed} --load-only\`; organization ${orgUid} holds ${Number(sizes?.methods).toLocaleString('en-US')} payment methods and ${Number(sizes?.limits).toLocaleString('en-US')} credit limits.`,
    '',
    'Every documented list shape, with the statements the service issues for it, each run once with',
    '`EXPLAIN (ANALYZE, BUFFERS)`. For a list whose count is remembered per table version: the first request',
    '(count with the version; for a deep page, the walk that remembers its anchors) and the one statement of',
    'every request while the version holds; for the others, count and page in one statement up to page 100,',
    'count then page beyond. Shown for the benchmark\'s scenarios: every scan with its rows and time, the',
    'conditions of the list indexes, and the execution time; for every other shape, the list indexes scanned and',
    'the execution times. The command fails if any plan contains a sequential scan. The design is in',
    '[performance.md](performance.md).',
    ...(empty.length > 0 ? ['', `Not shown: ${empty.map((resource) => `\`/api/${resource.path}/\``).join(', ')}, which the benchmark dataset does not fill.`] : []),
    '',
  ];
}

const SCAN = /(Seq Scan|Index Only Scan|Index Scan|Bitmap Index Scan)(?: Backward)?(?: using (\S+))? on (\S+)/;

/** Whether an index is one a list shape is served by (not a primary key a page joins back through). */
const isListIndex = (name: string) => !name.endsWith('_pkey');

/** The scans of a plan, with the conditions of those that use a list index, and the execution time. */
function keyLines(plan: string): string[] {
  const kept: string[] = [];
  let keepCondition = false;
  for (const line of plan.split('\n')) {
    const trimmed = line.trim();
    const scan = SCAN.exec(trimmed);
    if (scan) {
      const rows = /actual time=[\d.]+\.\.([\d.]+) rows=(\d+) loops=(\d+)/.exec(trimmed);
      const [, kind, index, table] = scan;
      kept.push(`${kind}${index ? ` ${index}` : ` on ${table}`}${rows ? `: ${rows[2]} rows${rows[3] === '1' ? '' : ` ×${rows[3]}`}, ${rows[1]} ms` : ''}`);
      keepCondition = !index || isListIndex(index);
    } else if (keepCondition && /^(Index Cond|Filter):/.test(trimmed)) {
      kept.push(`  ${trimmed.replace(/'(\d+)'::bigint/g, '$1').replace(/::(text|timestamp with time zone|bigint|numeric)/g, '')}`);
    } else if (trimmed.startsWith('Execution Time')) {
      kept.push(trimmed.replace('Execution Time', 'execution'));
    }
  }
  return kept;
}

/** The list indexes a plan scans (marked when only the index was read), and any sequential scan. */
function scannedIndexes(plan: string): string[] {
  const indexOnly = new Map<string, boolean>();
  const sequential: string[] = [];
  for (const scan of plan.split('\n').map((line) => SCAN.exec(line))) {
    if (!scan) continue;
    const [, kind, index, table] = scan;
    if (kind === 'Seq Scan') sequential.push(`**Seq Scan on ${table}**`);
    else if (index && isListIndex(index)) indexOnly.set(index, (indexOnly.get(index) ?? true) && kind === 'Index Only Scan');
  }
  return [...sequential, ...[...indexOnly].map(([index, only]) => `\`${index}\`${only ? ' (index-only)' : ''}`)];
}

async function explain(store: PostgresStore, statement: SqlQuery): Promise<string> {
  const rows = await store.query<{ 'QUERY PLAN': string }>(`EXPLAIN (ANALYZE, BUFFERS) ${statement.text}`, statement.values);
  return rows.map((row) => row['QUERY PLAN']).join('\n');
}

main().catch((error: unknown) => {
  process.stderr.write(`explain: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
});
