/**
 * The steps of `npm run test:citus` (test/citus/run.ts says what each does),
 * run by vitest with vitest.citus.config.ts against CITUS_URL.
 */
import { execFile } from 'node:child_process';
import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { parseArgs, promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey } from '../../src/auth/api-keys.js';
import { createOrganization } from '../../src/organizations/organizations.js';
import { publishAllEvents } from '../../src/events/publish-events.js';
import { importJsonl } from '../../src/import/index.js';
import { PostgresStore } from '../../src/store/postgres-store.js';
import type { QueryOptions, Queryable, Store, Transaction } from '../../src/store/store.js';
import { ensureDataset } from '../../bench/load.js';
import { organizations } from '../../bench/dataset.js';
import { basicAuthorization } from '../helpers/tenants.js';
import { spawnServer } from '../helpers/spawn-server.js';
import { FLEET_WIDE_STATEMENTS, runEventWorkload } from '../topology/event-workload.js';
import { runStatementWorkload } from '../topology/statement-workload.js';

const url = process.env.CITUS_URL ?? '';
const { values: args } = parseArgs({
  args: JSON.parse(process.env.CITUS_ARGS ?? '[]') as string[],
  options: { scale: { type: 'string', default: '1' }, 'skip-dataset': { type: 'boolean' }, 'skip-suites': { type: 'boolean' } },
});
const ROOT = path.resolve(import.meta.dirname, '../..');
const BIN = path.join(ROOT, 'bin/lending-api');
const run = promisify(execFile);
const failures: string[] = [];
const log = (line: string) => process.stdout.write(`${line}\n`);
const section = (title: string) => log(`\n== ${title}`);
const BUDGET_MS = process.env.DATABASE_REQUEST_BUDGET_MS ?? '20000';

/** A step that throws is a failure of the run too (the result line says so), not only of its test. */
function step(name: string, body: () => Promise<void>): () => Promise<void> {
  return async () => {
    const before = failures.length;
    try {
      await body();
    } catch (error) {
      if (failures.length === before) failures.push(`${name}: ${error instanceof Error ? error.message : String(error)}`);
      throw error;
    }
  };
}

let store: PostgresStore;

describe.skipIf(!url)('the sharding plan on a Citus cluster (CITUS_URL)', () => {
  beforeAll(async () => {
    store = new PostgresStore(url, { poolSize: 4, connectionTimeoutMs: 30_000 });
    await preflight(store);
  });
  afterAll(async () => {
    await store?.close();
    section('result');
    log(failures.length === 0 ? 'test:citus passed' : `test:citus FAILED:\n  - ${failures.join('\n  - ')}`);
  });
  it('1. migrate and distribute, twice', step('step 1', async () => {
    await distributionStep();
    expect(failures).toEqual([]);
  }));
  it.skipIf(Boolean(args['skip-dataset']))("2. imports the bench's dataset", step('step 2', () => datasetStep(Number(args.scale))));
  it.skipIf(Boolean(args['skip-suites']))('3. the list, ledger, import and HTTP suites pass on distributed tables', step('step 3', async () => {
    const before = failures.length;
    await suitesStep();
    expect(failures.slice(before)).toEqual([]);
  }));
  it('4. concurrent HTTP drawdowns keep the money exact', step('step 4', async () => {
    const before = failures.length;
    await concurrentWritesStep(store);
    expect(failures.slice(before)).toEqual([]);
  }));
  it('5. every statement shape is a single-shard router query (one task)', step('step 5', async () => {
    const before = failures.length;
    await routerStep(store);
    expect(failures.slice(before)).toEqual([]);
  }));
});

async function preflight(db: Store): Promise<void> {
  const [row] = await db.query<{ version: string; citus: string | null; workers: string }>(
    `SELECT current_setting('server_version') AS version, (SELECT extversion FROM pg_extension WHERE extname = 'citus') AS citus,
            (SELECT count(*) FROM pg_dist_node WHERE noderole = 'primary' AND groupid <> 0)::text AS workers`,
  );
  log(`coordinator ${db.description}: PostgreSQL ${row?.version}, citus ${row?.citus}, ${row?.workers} workers`);
}

async function cli(argv: string[], env: Record<string, string> = {}): Promise<string> {
  const { stdout, stderr } = await run(process.execPath, [BIN, ...argv], { env: { ...process.env, DATABASE_URL: url!, ...env }, maxBuffer: 64 << 20 });
  return `${stdout}${stderr}`.trimEnd();
}

async function distributionStep(): Promise<void> {
  section('1. lending-api migrate, lending-api distribute (twice)');
  log(await cli(['migrate']));
  const first = await cli(['distribute']);
  log(`$ lending-api distribute\n${first}`);
  const second = await cli(['distribute']);
  log(`$ lending-api distribute   (again)\n${second}`);
  const lines = second.split('\n').filter((line) => / (reference table|distributed by org_id)/.test(line));
  if (lines.length === 0 || lines.some((line) => !line.endsWith('(already)'))) failures.push('a second distribute placed something again');
}

async function datasetStep(scale: number): Promise<void> {
  section(`2. the bench's dataset, scale ${scale}, through the import`);
  const spec = { seed: 42, scale };
  const records = organizations(spec).reduce((sum, org) => sum + org.paymentMethods + org.creditLimits, 0);
  const loaded = await ensureDataset(store, spec, {
    // The schema was migrated and distributed in step 1; a database that already holds records is not emptied here.
    reset: async () => {
      const [held] = await store.query<{ any: boolean }>('SELECT EXISTS (SELECT 1 FROM payment_methods) OR EXISTS (SELECT 1 FROM credit_limits) AS any');
      if (held?.any) throw new Error('the database holds records but not this dataset: give test:citus an empty database');
    },
    log: (line) => log(`  ${line}`),
  });
  if (loaded.reused) log(`reused the dataset already loaded (${records.toLocaleString('en-US')} records)`);
  else log(`imported ${records.toLocaleString('en-US')} records in ${loaded.seconds.toFixed(0)} s: ${Math.round(records / loaded.seconds).toLocaleString('en-US')} records/s (index rebuild and VACUUM ANALYZE included)`);
}

const SUITES = [
  'test/listing/list-records.test.ts',
  'test/listing/cursor-pages.test.ts',
  'test/listing/row-counts.test.ts',
  'test/ledger',
  'test/import',
  'test/http/writes',
  'test/rate-limits/write-rate-limit.test.ts',
  'test/http/ledger-entries.test.ts',
  'test/http/list-payment-methods.test.ts',
  'test/http/authentication.test.ts',
  'test/portal/api/portal-sessions.test.ts',
  'test/events',
  'test/webhooks',
];

async function suitesStep(): Promise<void> {
  section('3. the list, ledger, import and HTTP suites, each schema distributed');
  const report = path.join(ROOT, 'node_modules/.cache/test-citus-report.json');
  await rm(report, { force: true });
  await run(process.execPath, [path.join(ROOT, 'node_modules/vitest/vitest.mjs'), 'run', ...SUITES, '--reporter=json', `--outputFile=${report}`], {
    cwd: ROOT,
    env: { ...process.env, DATABASE_URL: url!, TEST_DISTRIBUTE_ON_CITUS: '1' },
    maxBuffer: 256 << 20,
  }).catch(() => undefined); // failures are read from the report
  const result = JSON.parse(await readFile(report, 'utf8')) as {
    numTotalTests: number;
    numPassedTests: number;
    numFailedTests: number;
    testResults: { name: string; assertionResults: { fullName: string; status: string; failureMessages: string[] }[] }[];
  };
  log(`${result.numPassedTests} of ${result.numTotalTests} tests passed, ${result.numFailedTests} failed`);
  for (const file of result.testResults) {
    const passed = file.assertionResults.filter((test) => test.status === 'passed').length;
    log(`  ${path.relative(ROOT, file.name)}: ${passed}/${file.assertionResults.length}`);
    for (const test of file.assertionResults.filter((t) => t.status === 'failed')) {
      log(`    FAILED ${test.fullName}: ${(test.failureMessages[0] ?? '').split('\n')[0]}`);
    }
  }
  if (result.numFailedTests > 0 || result.numTotalTests === 0) failures.push(`suites: ${result.numFailedTests} of ${result.numTotalTests} failed`);
}

async function concurrentWritesStep(db: Store): Promise<void> {
  section('4. concurrent HTTP drawdowns on one credit limit, and the money check');
  const uid = `org_citus_writes_${Date.now()}`;
  const org = await createOrganization(db, 'Citus writes', uid);
  const key = await createApiKey(db, uid, undefined, 'write');
  const authorization = basicAuthorization(uid, key.key);
  await importJsonl(db, uid, Readable.from([`{"object":"credit_limit","uid":"cl_money","entity":"ent_money","currency":"USD","capacity":"1000.00","rate":"0.05"}\n`]));
  const requests = 300;
  const concurrency = 16;
  const statuses = new Map<number, number>();
  const unavailable: string[] = [];
  let accepted = 0n;
  let successes = 0;
  // A client's protocol: a 503 means "not done, or not known to be": the same request with the same
  // Idempotency-Key again either records it or replays what was recorded. Each key is sent until it
  // has a final answer (a bounded number of rounds).
  const finalStatus = new Map<number, number>();
  const post = async (i: number): Promise<void> => {
    const amount = `${(i % 7) + 1}.25`;
    const response = await fetch(`${server.url}/api/limits/cl_money/drawdowns/`, {
      method: 'POST',
      headers: { authorization, 'content-type': 'application/json', 'idempotency-key': `money-${i}` },
      body: JSON.stringify({ amount }),
    });
    const body = await response.text();
    statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
    if (response.status === 503 && unavailable.length < 2) unavailable.push(body.slice(0, 200));
    finalStatus.set(i, response.status);
    if (response.status === 201) {
      accepted += BigInt(amount.replace('.', ''));
      successes += 1;
    }
  };
  // The service's own per-request database budget (2 s by default) is sized for a dedicated server;
  // on this shared machine three PostgreSQL servers and the service share the cores.
  const server = await spawnServer([], { DATABASE_URL: url, RATE_LIMIT_PER_MINUTE: '0', WRITE_RATE_LIMIT_PER_MINUTE: '0', DATABASE_REQUEST_BUDGET_MS: BUDGET_MS });
  try {
    let pending = Array.from({ length: requests }, (_, i) => i);
    for (let round = 0; round < 10 && pending.length > 0; round += 1) {
      const queue = [...pending];
      const worker = async () => {
        for (let i = queue.shift(); i !== undefined; i = queue.shift()) await post(i);
      };
      await Promise.all(Array.from({ length: concurrency }, worker));
      pending = pending.filter((i) => finalStatus.get(i) === 503);
    }
    if (pending.length > 0) failures.push(`${pending.length} drawdowns still answered 503 after 10 rounds`);
  } finally {
    server.child.kill('SIGTERM');
    await server.exited;
  }
  if (unavailable.length > 0) log(`503 answers (retried with the same Idempotency-Key), e.g.: ${unavailable.join(' | ')}`);
  const [state] = await db.query<{ outstanding: string; capacity: string; entries: string; sum: string }>(
    `SELECT l.outstanding::text AS outstanding, l.capacity::text AS capacity,
            (SELECT count(*) FROM ledger_entries e WHERE e.org_id = $1 AND e.limit_id = l.id)::text AS entries,
            (SELECT coalesce(sum(amount), 0) FROM ledger_entries e WHERE e.org_id = $1 AND e.limit_id = l.id)::text AS sum
       FROM credit_limits l WHERE l.org_id = $1 AND l.uid = 'cl_money'`,
    [org.id],
  );
  const acceptedText = `${accepted / 100n}.${String(accepted % 100n).padStart(2, '0')}`;
  log(`DATABASE_REQUEST_BUDGET_MS=${BUDGET_MS}; ${requests} drawdowns, ${concurrency} at a time, answers (retries included): ${[...statuses].map(([status, n]) => `${n} × ${status}`).join(', ')}; ${successes} recorded`);
  log(`accepted amounts ${acceptedText}; stored outstanding ${state?.outstanding} (capacity ${state?.capacity}); ${state?.entries} entries summing to ${state?.sum}`);
  const ok =
    state !== undefined &&
    Number(state.entries) === successes &&
    state.outstanding === acceptedText &&
    state.sum === acceptedText &&
    Number(state.outstanding) <= Number(state.capacity) &&
    [...statuses.keys()].every((status) => status === 201 || status === 409 || status === 503);
  log(ok ? 'money check: exact' : 'money check: FAILED');
  if (!ok) failures.push('concurrent writes: the money check failed');
  await eventsOfWrites(db, org.id, successes);
}

/**
 * The events of step 4's drawdowns, published by the serve process: each
 * recorded entry has exactly one ledger_entry.created event, and each event
 * names the Idempotency-Key of its request — the write's SET LOCAL reached
 * the trigger on the worker that holds the shard.
 */
async function eventsOfWrites(db: Store, orgId: string, entries: number): Promise<void> {
  const [left] = await db.query<{ n: string }>('SELECT count(*)::text AS n FROM event_outbox WHERE org_id = $1', [orgId]);
  if (Number(left?.n) > 0) await publishAllEvents(db, orgId); // the process stopped before its sweep: publish what it left
  const [events] = await db.query<{ created: string; distinct_entries: string; with_key: string; limit_updates: string }>(
    `SELECT count(*) FILTER (WHERE type = 'ledger_entry.created')::text AS created,
            count(DISTINCT object_uid) FILTER (WHERE type = 'ledger_entry.created')::text AS distinct_entries,
            count(*) FILTER (WHERE type = 'ledger_entry.created' AND idempotency_key LIKE 'money-%')::text AS with_key,
            count(*) FILTER (WHERE type = 'credit_limit.updated')::text AS limit_updates
       FROM events WHERE org_id = $1`,
    [orgId],
  );
  log(`events: ${events?.created} ledger_entry.created for ${entries} entries (${events?.distinct_entries} distinct, ${events?.with_key} naming their Idempotency-Key), ${events?.limit_updates} credit_limit.updated`);
  const exact = Number(events?.created) === entries && Number(events?.distinct_entries) === entries && Number(events?.with_key) === entries && Number(events?.limit_updates) === entries;
  log(exact ? 'events check: exact' : 'events check: FAILED');
  if (!exact) failures.push('concurrent writes: the events of the drawdowns are not exactly one per entry, each naming its Idempotency-Key');
}

interface PlanNode {
  'Node Type'?: string;
  'Custom Plan Provider'?: string;
  'Distributed Query'?: { Job?: { 'Task Count'?: number; Tasks?: unknown[] } };
  'INSERT/SELECT method'?: string;
  Plans?: PlanNode[];
  Subplans?: unknown[];
  [key: string]: unknown;
}

type Verdict = 'router' | 'local' | 'insert-select' | 'multi-task';

async function routerStep(db: Store): Promise<void> {
  section('5. EXPLAIN of every statement shape: one task each');
  const shapes = new Map<string, { verdict: Verdict; tasks: number[] }>();
  const unexplained: string[] = [];
  const explaining = explainingStore(db, shapes, unexplained);
  try {
    await runStatementWorkload(db, explaining);
    await runEventWorkload(db, explaining);
  } finally {
    // A failed EXPLAIN fails its statement's transaction; the deliverer only logs that, so name it here first.
    for (const error of unexplained) failures.push(`EXPLAIN failed: ${error}`);
  }
  const byVerdict = new Map<Verdict, number>();
  for (const { verdict } of shapes.values()) byVerdict.set(verdict, (byVerdict.get(verdict) ?? 0) + 1);
  log(`${shapes.size} statement shapes: ${[...byVerdict].map(([verdict, n]) => `${n} ${verdict}`).join(', ')}`);
  log('  (router: every Citus plan in it has Task Count 1; local: the import\'s temporary tables only, no shard;');
  log('   insert-select: INSERT … SELECT from temporary tables, rows pulled to the coordinator and sent to the org_id\'s shard)');
  for (const [sql, { verdict, tasks }] of shapes) {
    log(`  ${verdict.padEnd(13)} ${tasks.length > 0 ? `tasks ${tasks.join('+')}`.padEnd(12) : ''.padEnd(12)} ${sql.slice(0, 150)}`);
  }
  const fleetWide = (sql: string) => FLEET_WIDE_STATEMENTS.some((pattern) => pattern.test(sql));
  for (const [sql, { tasks }] of shapes) if (fleetWide(sql)) log(`  fleet-wide by design (which organizations have work): tasks ${tasks.join('+')}: ${sql.slice(0, 100)}`);
  const scattered = [...shapes].filter(([sql, shape]) => shape.verdict === 'multi-task' && !fleetWide(sql));
  if (scattered.length > 0) failures.push(`${scattered.length} statement shape(s) are not single-shard: ${scattered.map(([sql]) => sql.slice(0, 80)).join(' | ')}`);
}

const NOT_EXPLAINABLE = /^(SET|BEGIN|COMMIT|ROLLBACK|COPY|CREATE|DROP|ALTER|TRUNCATE|VACUUM|ANALYZE|LOCK)\b/i;

/** Runs every statement after an EXPLAIN of it with the same parameters, in the same transaction. */
function explainingStore(db: Store, shapes: Map<string, { verdict: Verdict; tasks: number[] }>, unexplained: string[]): Store {
  const explain = async (queryable: Queryable, sql: string, params?: readonly unknown[]) => {
    const text = sql.replace(/\s+/g, ' ').trim();
    if (NOT_EXPLAINABLE.test(text) || /pg_advisory_xact_lock|set_config\(/.test(text) || shapes.has(text)) return;
    const [row] = await queryable.query<{ 'QUERY PLAN': PlanNode[] }>(`EXPLAIN (FORMAT JSON) ${sql}`, params).catch((error: unknown) => {
      const message = `${error instanceof Error ? error.message : String(error)}, in: ${text.slice(0, 400)}`;
      unexplained.push(message);
      throw new Error(message);
    });
    shapes.set(text, classify(row?.['QUERY PLAN']?.[0] ?? {}));
  };
  // An error of the statement itself names it too.
  const named = <T>(sql: string, promise: Promise<T>): Promise<T> =>
    promise.catch((error: unknown) => {
      if (error instanceof Error) error.message = `${error.message}, in: ${sql.replace(/\s+/g, ' ').trim().slice(0, 400)}`;
      throw error;
    });
  const wrapTx = (tx: Transaction): Transaction => ({
    query: async (sql, params, options) => (await explain(tx, sql, params), named(sql, tx.query(sql, params, options))),
    exec: (sql) => named(sql, tx.exec(sql)),
    copyFrom: (target, chunks) => named(`COPY ${target}`, tx.copyFrom(target, chunks)),
    queryAtCommit: (sql, params) => tx.queryAtCommit(sql, params),
    commitWith: async (statements) => {
      for (const statement of statements) await explain(tx, statement.sql, statement.params);
      return named(statements.map((statement) => statement.sql).join('; '), tx.commitWith(statements));
    },
  });
  return {
    kind: db.kind,
    description: db.description,
    query: async <Row>(sql: string, params?: readonly unknown[], options?: QueryOptions) => (await explain(db, sql, params), named(sql, db.query<Row>(sql, params, options))),
    exec: (sql) => named(sql, db.exec(sql)),
    transaction: (fn, options) => db.transaction((tx) => fn(wrapTx(tx)), options),
    ping: () => db.ping(),
    close: () => db.close(),
  };
}

function classify(plan: unknown): { verdict: Verdict; tasks: number[] } {
  const tasks: number[] = [];
  let insertSelect = false;
  const visit = (node: unknown) => {
    if (Array.isArray(node)) return node.forEach(visit);
    if (!node || typeof node !== 'object') return;
    const record = node as PlanNode;
    const count = record['Distributed Query']?.Job?.['Task Count'];
    if (typeof count === 'number') tasks.push(count);
    if (typeof record['INSERT/SELECT method'] === 'string' || String(record['Custom Plan Provider'] ?? '').includes('INSERT ... SELECT')) insertSelect = true;
    for (const value of Object.values(record)) visit(value);
  };
  visit(plan);
  if (tasks.some((count) => count > 1)) return { verdict: 'multi-task', tasks };
  if (insertSelect) return { verdict: 'insert-select', tasks };
  return { verdict: tasks.length > 0 ? 'router' : 'local', tasks };
}
