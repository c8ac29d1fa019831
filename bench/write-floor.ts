/**
 * wfloor (issue 50; ecost's A/B of issue 47): what a drawdown costs the
 * database, against two anchors measured in the same invocation on the same
 * server:
 *
 * - this tree's service, closed-loop drawdowns from 32 connections over
 *   1,000 limits (each with a fresh Idempotency-Key): PostgreSQL CPU µs,
 *   WAL bytes and drawdowns per second;
 * - the release before events (`--before`, default 7f6599e), built in the
 *   temporary directory, the same load (ecost's target: ≤ +25 % PostgreSQL CPU);
 * - pgbench's TPC-B (`-c 32 -j 2 -T 15`, scale 10) on a scratch database:
 *   its CPU and WAL per transaction (issue 50's target: a drawdown ≤ one).
 *
 * With `loans` among the parts (`--floor-parts now,before,loans`), each round
 * also runs the same load of loan creations (POST /api/loans/, 0.01 on the
 * same 1,000 limits, each paid out to its entity's payment method, made here
 * once) on this tree and, with `before`, on the release before (pass
 * `--before` the commit to compare with): loans per second, PostgreSQL CPU
 * and WAL per loan.
 *
 * PostgreSQL CPU is the whole server's (postmaster tree, exited backends
 * included: server-cost.ts), so the server should be one this run has to
 * itself: BENCH_SERVER_URL=postgres://postgres@127.0.0.1:5499/postgres
 * (initdb in /tmp, shared_preload_libraries = 'pg_stat_statements' for the
 * statement table printed with the figures).
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { loadavg } from 'node:os';
import { promisify } from 'node:util';
import pg from 'pg';
import { PostgresStore } from '../src/store/postgres-store.js';
import { percentile } from './burst-client.js';
import { builtTreeOf, prepareWrites, serveTree, type TreeService } from './floor-trees.js';
import { writeBenchRecord, type MeasuredRow } from './results-record.js';
import { serverTreeCpuSeconds, statementCosts, statementStatsReady, walPosition } from './server-cost.js';
import { SPREAD_LIMITS } from './write-scenarios.js';
import { fileURLToPath } from 'node:url';

export const FLOOR_SCENARIO_ID = 'wfloor';
const CONNECTIONS = 32;
const WARMUP_SECONDS = 3;
const TPCB_SECONDS = 15;
const TPCB_SCALE = 10;
/** ecost (issue 47): a drawdown's PostgreSQL CPU at most this much above the release before events. */
const EVENTS_COST_TARGET = 0.25;
const ROOT = fileURLToPath(new URL('..', import.meta.url));

interface Measured {
  readonly perSecond: number;
  readonly pgUs: number;
  readonly walBytes: number;
  readonly serviceUs: number;
}

export interface FloorOptions {
  readonly seconds: number;
  readonly rounds: number;
  readonly before: string;
  readonly logLevel: string;
  /** Which measurements: `now`, `before`, `tpcb` (all by default), and `loans` (loan creations beside the drawdowns). */
  readonly parts: readonly string[];
}

function serverUrl(): string {
  return process.env.BENCH_SERVER_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
}

function databaseUrl(name: string): string {
  const url = new URL(serverUrl());
  url.pathname = `/${name}`;
  return url.toString();
}

async function ensureDatabase(name: string, fresh: boolean): Promise<void> {
  const admin = new pg.Client({ connectionString: serverUrl() });
  await admin.connect();
  try {
    if (fresh) await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    const exists = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (exists.rowCount === 0) await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
}

type Writes = 'drawdowns' | 'loans';

/** The next request of a closed loop: a drawdown or a loan on limit k of the 1,000. */
function requestOf(writes: Writes, k: number): { path: string; body: string } {
  if (writes === 'drawdowns') return { path: `/api/limits/cl_bench_w_${k}/drawdowns/`, body: '{"amount":"0.01"}' };
  return { path: '/api/loans/', body: JSON.stringify({ credit_limit: `cl_bench_w_${k}`, payment_method: `pm_bench_w_${k}`, principal: '0.01' }) };
}

/** A payment method of each spread limit's entity, for the loans (the same rows in either tree's schema). */
async function ensureLoanMethods(name: string): Promise<void> {
  const db = new PostgresStore(databaseUrl(name), { poolSize: 1 });
  try {
    await db.query(
      `INSERT INTO payment_methods (org_id, uid, entity, type, currency, last_2, created_at, updated_at)
       SELECT o.id, 'pm_bench_w_' || k, 'ent_bench_w_' || k, 'ACH', 'USD', '00', now(), now()
         FROM organizations o CROSS JOIN generate_series(0, $1::int - 1) AS k
        WHERE o.uid = 'bench_writes'
       ON CONFLICT DO NOTHING`,
      [SPREAD_LIMITS],
    );
  } finally {
    await db.close();
  }
}

async function closedLoop(url: string, key: string, seconds: number, writes: Writes = 'drawdowns'): Promise<number> {
  let sent = 0;
  let created = 0;
  const deadline = performance.now() + seconds * 1000;
  const loop = async () => {
    while (performance.now() < deadline) {
      sent += 1;
      try {
        const { path, body } = requestOf(writes, sent % SPREAD_LIMITS);
        const response = await fetch(`${url}${path}`, {
          method: 'POST',
          headers: { authorization: key, 'content-type': 'application/json', 'idempotency-key': randomUUID() },
          body,
        });
        await response.arrayBuffer();
        if (response.status === 201) created += 1;
      } catch {
        // counted as not created
      }
    }
  };
  await Promise.all(Array.from({ length: CONNECTIONS }, loop));
  return created;
}

/** Server CPU, WAL and the service's CPU over `work`, per unit it reports. */
async function measure(db: PostgresStore, service: { cpuSeconds(): Promise<number> } | undefined, seconds: number, work: () => Promise<number>): Promise<Measured> {
  const cpu0 = await serverTreeCpuSeconds(db);
  const wal0 = await walPosition(db);
  const svc0 = (await service?.cpuSeconds()) ?? 0;
  const units = Math.max(await work(), 1);
  const svc1 = (await service?.cpuSeconds()) ?? 0;
  const wal1 = await walPosition(db);
  const cpu1 = await serverTreeCpuSeconds(db);
  return { perSecond: units / seconds, pgUs: ((cpu1 - cpu0) * 1e6) / units, walBytes: Number(wal1 - wal0) / units, serviceUs: ((svc1 - svc0) * 1e6) / units };
}

async function drawdownRound(
  tree: string,
  name: string,
  key: string,
  options: FloorOptions,
  log: (line: string) => void,
  profile: boolean,
  writes: Writes = 'drawdowns',
): Promise<{ measured: Measured; statements: string[] }> {
  const unit = writes === 'loans' ? 'loan' : 'drawdown';
  const db = new PostgresStore(databaseUrl(name), { poolSize: 2 });
  let service: TreeService | undefined;
  try {
    // The checkpoint before the warm-up: its first changes of each page (full-page images) fall there, not in the measurement.
    await db.exec('VACUUM (ANALYZE)');
    await db.exec('CHECKPOINT');
    service = await serveTree(tree, { DATABASE_URL: databaseUrl(name), RATE_LIMIT_PER_MINUTE: '0', WRITE_RATE_LIMIT_PER_MINUTE: '0', LOG_LEVEL: options.logLevel });
    await closedLoop(service.url, key, WARMUP_SECONDS, writes);
    const stats = profile && (await statementStatsReady(db));
    const live = service;
    const measured = await measure(db, live, options.seconds, () => closedLoop(live.url, key, options.seconds, writes));
    const drawdowns = measured.perSecond * options.seconds;
    const statements = stats
      ? (await statementCosts(db, 20)).map(
          (s) => `  ${((s.totalMs * 1000) / drawdowns).toFixed(1).padStart(7)} µs ${(s.calls / drawdowns).toFixed(2).padStart(6)} calls ${(s.walBytes / drawdowns).toFixed(0).padStart(5)} WAL B ${s.topLevel ? ' ' : '↳'} ${s.query.replace(/\s+/g, ' ').slice(0, 110)}`,
        )
      : [];
    log(`(${FLOOR_SCENARIO_ID}) ${name}: ${measured.perSecond.toFixed(0)} ${unit}s/s, PostgreSQL ${measured.pgUs.toFixed(0)} µs, WAL ${measured.walBytes.toFixed(0)} B, service ${measured.serviceUs.toFixed(0)} µs per ${unit}`);
    return { measured, statements };
  } finally {
    await service?.stop();
    await db.close();
  }
}

async function tpcbRound(options: FloorOptions, log: (line: string) => void): Promise<Measured> {
  const url = new URL(databaseUrl('bench_tpcb'));
  const args = ['-h', url.hostname, '-p', url.port || '5432', '-U', decodeURIComponent(url.username || 'postgres')];
  const db = new PostgresStore(url.toString(), { poolSize: 1 });
  try {
    const [ready] = await db.query<{ n: string }>("SELECT count(*)::text AS n FROM pg_class WHERE relname = 'pgbench_accounts'");
    if (ready?.n !== '1') await promisify(execFile)('pgbench', [...args, '-i', '-q', '-s', String(TPCB_SCALE), 'bench_tpcb']);
    await db.exec('VACUUM (ANALYZE)');
    await db.exec('CHECKPOINT');
    await promisify(execFile)('pgbench', [...args, '-n', '-c', String(CONNECTIONS), '-j', '2', '-T', String(WARMUP_SECONDS), 'bench_tpcb']);
    const measured = await measure(db, undefined, TPCB_SECONDS, async () => {
      const { stdout } = await promisify(execFile)('pgbench', [...args, '-n', '-c', String(CONNECTIONS), '-j', '2', '-T', String(TPCB_SECONDS), 'bench_tpcb']);
      return Number(/number of transactions actually processed: (\d+)/.exec(stdout)?.[1] ?? 0);
    });
    log(`(${FLOOR_SCENARIO_ID}) TPC-B: ${measured.perSecond.toFixed(0)} tx/s, PostgreSQL ${measured.pgUs.toFixed(0)} µs, WAL ${measured.walBytes.toFixed(0)} B per transaction`);
    return measured;
  } finally {
    await db.close();
  }
}

const median = (values: number[]) => percentile(values, 50);
const medianOf = (runs: Measured[]): Measured => ({
  perSecond: median(runs.map((r) => r.perSecond)),
  pgUs: median(runs.map((r) => r.pgUs)),
  walBytes: median(runs.map((r) => r.walBytes)),
  serviceUs: median(runs.map((r) => r.serviceUs)),
});

export async function runWriteFloor(options: FloorOptions, log: (line: string) => void): Promise<string[]> {
  const beforeTree = await builtTreeOf(options.before, log);
  const nowName = 'bench_floor_now';
  const beforeName = `bench_floor_${options.before}`;
  await ensureDatabase(nowName, false);
  await ensureDatabase(beforeName, false);
  await ensureDatabase('bench_tpcb', false);
  await promisify(execFile)('npm', ['run', 'build'], { cwd: ROOT });
  const nowKey = await prepareWrites(ROOT, databaseUrl(nowName));
  const beforeKey = options.parts.includes('before') ? await prepareWrites(beforeTree, databaseUrl(beforeName)) : '';
  const loans = options.parts.includes('loans');
  if (loans) for (const name of options.parts.includes('before') ? [nowName, beforeName] : [nowName]) await ensureLoanMethods(name);
  const runs = { now: [] as Measured[], before: [] as Measured[], tpcb: [] as Measured[], loansNow: [] as Measured[], loansBefore: [] as Measured[] };
  let statements: string[] = [];
  for (let round = 1; round <= options.rounds; round += 1) {
    const now = await drawdownRound(ROOT, nowName, nowKey, options, log, round === options.rounds);
    runs.now.push(now.measured);
    if (now.statements.length > 0) statements = now.statements;
    if (options.parts.includes('before')) runs.before.push((await drawdownRound(beforeTree, beforeName, beforeKey, options, log, false)).measured);
    if (options.parts.includes('tpcb')) runs.tpcb.push(await tpcbRound(options, log));
    if (loans) {
      runs.loansNow.push((await drawdownRound(ROOT, nowName, nowKey, options, log, false, 'loans')).measured);
      if (options.parts.includes('before')) runs.loansBefore.push((await drawdownRound(beforeTree, beforeName, beforeKey, options, log, false, 'loans')).measured);
    }
  }
  const [now, before, tpcb] = [medianOf(runs.now), medianOf(runs.before), medianOf(runs.tpcb)];
  const overBefore = now.pgUs / before.pgUs - 1;
  const overTpcb = now.pgUs / tpcb.pgUs;
  const rows: MeasuredRow[] = [
    { id: 'wfloor-postgres', title: 'PostgreSQL CPU per drawdown, closed loop, 32 connections, 1,000 limits', connections: CONNECTIONS, service: { p50: NaN, p99: NaN, failures: 0, perSecond: now.perSecond, cpuUs: now.pgUs } },
    { id: 'wfloor-service', title: 'service CPU per drawdown, same run', connections: CONNECTIONS, service: { p50: NaN, p99: NaN, failures: 0, perSecond: now.perSecond, cpuUs: now.serviceUs } },
    { id: 'wfloor-wal', title: 'WAL bytes per drawdown (as cpuUs)', connections: CONNECTIONS, service: { p50: NaN, p99: NaN, failures: 0, perSecond: now.perSecond, cpuUs: now.walBytes } },
    { id: `wfloor-before-postgres`, title: `PostgreSQL CPU per drawdown at ${options.before} (before events)`, connections: CONNECTIONS, service: { p50: NaN, p99: NaN, failures: 0, perSecond: before.perSecond, cpuUs: before.pgUs } },
    { id: 'wfloor-before-wal', title: `WAL bytes per drawdown at ${options.before} (as cpuUs)`, connections: CONNECTIONS, service: { p50: NaN, p99: NaN, failures: 0, perSecond: before.perSecond, cpuUs: before.walBytes } },
    { id: 'wfloor-tpcb-postgres', title: `PostgreSQL CPU per pgbench TPC-B transaction, -c 32, scale ${TPCB_SCALE}`, connections: CONNECTIONS, service: { p50: NaN, p99: NaN, failures: 0, perSecond: tpcb.perSecond, cpuUs: tpcb.pgUs } },
    { id: 'wfloor-tpcb-wal', title: 'WAL bytes per TPC-B transaction (as cpuUs)', connections: CONNECTIONS, service: { p50: NaN, p99: NaN, failures: 0, perSecond: tpcb.perSecond, cpuUs: tpcb.walBytes } },
  ];
  const load = loadavg().map((l) => l.toFixed(2)).join(' ');
  const record = await writeBenchRecord({ rows, database: `PostgreSQL at ${new URL(serverUrl()).host}`, note: `load average ${load}` });
  const f = (n: number) => n.toFixed(0);
  return [
    `(${FLOOR_SCENARIO_ID}) medians of ${options.rounds} round(s) of ${options.seconds} s, load average ${load}`,
    `(${FLOOR_SCENARIO_ID}) drawdown now: ${f(now.perSecond)}/s, PostgreSQL ${f(now.pgUs)} µs, WAL ${f(now.walBytes)} B, service ${f(now.serviceUs)} µs`,
    `(${FLOOR_SCENARIO_ID}) drawdown at ${options.before}: ${f(before.perSecond)}/s, PostgreSQL ${f(before.pgUs)} µs, WAL ${f(before.walBytes)} B, service ${f(before.serviceUs)} µs`,
    `(${FLOOR_SCENARIO_ID}) TPC-B: ${f(tpcb.perSecond)} tx/s, PostgreSQL ${f(tpcb.pgUs)} µs, WAL ${f(tpcb.walBytes)} B`,
    `(ecost) PostgreSQL per drawdown ${(overBefore * 100).toFixed(1)}% over ${options.before} (target ≤ +${EVENTS_COST_TARGET * 100}% ${overBefore <= EVENTS_COST_TARGET ? '✓' : '✗'})`,
    `(${FLOOR_SCENARIO_ID}) drawdown / TPC-B PostgreSQL CPU: ${overTpcb.toFixed(2)}× (target ≤ 1 ${overTpcb <= 1 ? '✓' : '✗'}); WAL ${(now.walBytes / tpcb.walBytes).toFixed(2)}×`,
    ...(loans ? loanLines(medianOf(runs.loansNow), runs.loansBefore.length > 0 ? medianOf(runs.loansBefore) : undefined, tpcb, options.before) : []),
    ...(statements.length > 0 ? [`(${FLOOR_SCENARIO_ID}) pg_stat_statements, per drawdown (nested statements included, so rows overlap):`, ...statements] : []),
    `record of this run: ${record}`,
  ];
}

function loanLines(now: Measured, before: Measured | undefined, tpcb: Measured, commit: string): string[] {
  const f = (n: number) => n.toFixed(0);
  return [
    `(${FLOOR_SCENARIO_ID}) loan now: ${f(now.perSecond)}/s, PostgreSQL ${f(now.pgUs)} µs, WAL ${f(now.walBytes)} B, service ${f(now.serviceUs)} µs`,
    ...(before
      ? [
          `(${FLOOR_SCENARIO_ID}) loan at ${commit}: ${f(before.perSecond)}/s, PostgreSQL ${f(before.pgUs)} µs, WAL ${f(before.walBytes)} B, service ${f(before.serviceUs)} µs`,
          `(${FLOOR_SCENARIO_ID}) loans a second now / at ${commit}: ${(now.perSecond / before.perSecond).toFixed(2)}×`,
        ]
      : []),
    `(${FLOOR_SCENARIO_ID}) loan / TPC-B PostgreSQL CPU: ${(now.pgUs / tpcb.pgUs).toFixed(2)}×`,
  ];
}
