// Import throughput on PostgreSQL: for each file shape, generates a JSON
// Lines file, imports it into a fresh schema, then imports it again (every
// line unchanged). Prints lines per second for both, timed around the
// import itself (`importJsonl`, what `lending-api import` reports as its
// `seconds`), with the CPU time of this process and of its PostgreSQL backend.
//
//   npm run bench:import -- [LINES] [--shape records|mixed|ledger|all] [--statement-times] [--no-reimport] [--floor]     (default 1,000,000 lines, all shapes)
//
// --statement-times also prints, after each import, the statements that took the
// most time (client side, summed per statement text).
// --floor also measures, after the first import, PostgreSQL's floor for that file
// (bench/import-floor.ts): the backend CPU of only the writes no import can avoid,
// which bounds the rate any import of the file can reach on this machine.
//
// Shapes (bench/generate-import-file.ts): `records` half payment methods, half
// credit limits; `mixed` 80% records and 20% drawdowns and repayments spread
// over the file's limits; `ledger` drawdowns and repayments only, on limits
// imported beforehand (not timed).
//
// DATABASE_URL=postgres://… picks the server (default postgres://postgres@127.0.0.1:5432/test)
import { createReadStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { createOrganization } from '../src/organizations/organizations.js';
import { importJsonl, type ImportSummary } from '../src/import/index.js';
import { migrate } from '../src/store/migrate.js';
import { PostgresStore } from '../src/store/postgres-store.js';
import { measureImportFloor, organizationId } from './import-floor.js';
import { FILE_SHAPES, writeImportFile, writeLedgerLimitsFile, type FileShape } from './generate-import-file.js';
import { readCpuTimes, stolenShare } from './host-load.js';
import { timeStatements } from './statement-timer.js';

const { values: options, positionals } = parseArgs({ allowPositionals: true, options: { shape: { type: 'string', default: 'all' }, 'statement-times': { type: 'boolean', default: false }, 'no-reimport': { type: 'boolean', default: false }, floor: { type: 'boolean', default: false } } });
const lines = Number(positionals[0] ?? 1_000_000);
const shapes = options.shape === 'all' ? FILE_SHAPES : FILE_SHAPES.filter((shape) => shape === options.shape);
if (shapes.length === 0) throw new Error(`--shape must be one of ${FILE_SHAPES.join(', ')} or all, not ${options.shape}`);
const url = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
if (!/^postgres(ql)?:/.test(url)) throw new Error('bench:import measures PostgreSQL: set DATABASE_URL=postgres://…');

const dir = await mkdtemp(path.join(os.tmpdir(), 'import-bench-'));
const admin = new PostgresStore(url, { poolSize: 1 });
try {
  for (const shape of shapes) await benchShape(shape);
} finally {
  await admin.close();
  await rm(dir, { recursive: true, force: true });
}

async function benchShape(shape: FileShape): Promise<void> {
  const file = path.join(dir, `${shape}.jsonl`);
  const schema = `bench_${randomBytes(4).toString('hex')}`;
  await admin.query(`CREATE SCHEMA ${schema}`);
  const benchUrl = new URL(url);
  benchUrl.searchParams.set('application_name', schema);
  const store = new PostgresStore(benchUrl.toString(), { poolSize: 1, searchPath: schema });
  try {
    process.stderr.write(`${shape}: generating ${lines.toLocaleString('en-US')} lines…\n`);
    await writeImportFile(file, lines, shape);
    const size = (await stat(file)).size;
    await migrate(store);
    const org = await createOrganization(store, 'Bench', 'org_bench');
    if (shape === 'ledger') {
      const limits = path.join(dir, 'ledger-limits.jsonl');
      await writeLedgerLimitsFile(limits, lines);
      const summary = await importJsonl(store, org.uid, createReadStream(limits));
      process.stderr.write(`ledger: ${summary.inserted.toLocaleString('en-US')} credit limits imported first (not timed)\n`);
    }

    const run = async (label: string) => {
      const hostBefore = await readCpuTimes();
      const nodeBefore = process.cpuUsage();
      const pgBefore = await backendCpuSeconds(schema);
      const started = process.hrtime.bigint();
      const timer = options['statement-times'] ? timeStatements(store) : undefined;
      const summary: ImportSummary = await importJsonl(timer?.store ?? store, org.uid, createReadStream(file, { highWaterMark: 256 * 1024 }));
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const rate = Math.round(lines / seconds);
      const nodeCpu = cpuSeconds(process.cpuUsage(nodeBefore));
      const pgCpu = (await backendCpuSeconds(schema)) - pgBefore;
      const stolen = stolenShare(hostBefore, await readCpuTimes());
      const ledger = summary.ledger_entries;
      process.stdout.write(
        `${shape} ${label}: ${lines.toLocaleString('en-US')} lines (${(size / 1e6).toFixed(0)} MB) in ${seconds.toFixed(2)}s = ${rate.toLocaleString('en-US')} lines/s ` +
          `(records: inserted ${summary.inserted}, updated ${summary.updated}, unchanged ${summary.unchanged}; ledger: applied ${ledger.applied}, unchanged ${ledger.unchanged})\n` +
          `  CPU: node ${nodeCpu.toFixed(2)}s + PostgreSQL backend ${pgCpu.toFixed(2)}s = ${Math.round(lines / (nodeCpu + pgCpu)).toLocaleString('en-US')} lines per CPU-second` +
          ` (load average ${os.loadavg()[0]?.toFixed(1)} on ${os.cpus().length} CPUs` +
          `${stolen === undefined ? '' : `, ${(stolen * 100).toFixed(1)}% of CPU time taken by other guests of the host`})\n`,
      );
      for (const time of timer?.times().slice(0, 12) ?? []) {
        process.stdout.write(`    ${time.ms.toFixed(0).padStart(7)} ms ${String(time.calls).padStart(5)}×  ${time.statement}\n`);
      }
    };
    await run('first import (all new)   ');
    if (options.floor) await printFloor(shape, schema, await organizationId(store, org.uid));
    if (!options['no-reimport']) await run('re-import (all unchanged)');
  } finally {
    await store.close();
    await admin.query(`DROP SCHEMA ${schema} CASCADE`).catch(() => {});
    await rm(file, { force: true });
  }
}

async function printFloor(shape: FileShape, schema: string, orgId: string): Promise<void> {
  const floor = await measureImportFloor(url, backendCpuSeconds, { schema, orgId }, shape === 'ledger' ? ['credit_limits'] : []);
  const phases = floor.phases.filter((phase) => phase.rows > 0).map((phase) => `${phase.label} ${phase.rows.toLocaleString('en-US')} rows ${phase.cpuSeconds.toFixed(2)}s`);
  process.stdout.write(
    `${shape} floor (only the unavoidable writes): PostgreSQL backend ${floor.cpuSeconds.toFixed(2)}s = at most ${Math.round(lines / floor.cpuSeconds).toLocaleString('en-US')} lines/s ` +
      `(${phases.join('; ')}; load average ${os.loadavg()[0]?.toFixed(1)})\n`,
  );
}

function cpuSeconds(usage: NodeJS.CpuUsage): number {
  return (usage.user + usage.system) / 1e6;
}

/**
 * CPU time of this benchmark's PostgreSQL backend (same machine only), so the
 * figure means something on a machine that other work keeps busy.
 */
async function backendCpuSeconds(applicationName: string): Promise<number> {
  const rows = await admin.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE application_name = $1', [applicationName]);
  let total = 0;
  for (const { pid } of rows) {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    total += (Number(fields[11] ?? 0) + Number(fields[12] ?? 0)) / 100;
  }
  return total;
}
