// Import throughput on PostgreSQL: generates a JSON Lines file of payment
// methods and credit limits, imports it into a fresh schema, then imports it
// again (every line unchanged). Prints lines per second for both.
//
//   npm run bench:import -- [LINES]      (default 1,000,000)
//   DATABASE_URL=postgres://… picks the server (default postgres://postgres@127.0.0.1:5432/test)
import { createReadStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { createOrganization } from '../src/auth/organizations.js';
import { importJsonl, type ImportSummary } from '../src/import/index.js';
import { migrate } from '../src/store/migrate.js';
import { PostgresStore } from '../src/store/postgres-store.js';
import { writeImportFile } from './generate-import-file.js';
import { readCpuTimes, stolenShare } from './host-load.js';

const lines = Number(process.argv[2] ?? 1_000_000);
const url = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
if (!/^postgres(ql)?:/.test(url)) throw new Error('bench:import measures PostgreSQL: set DATABASE_URL=postgres://…');

const dir = await mkdtemp(path.join(os.tmpdir(), 'import-bench-'));
const file = path.join(dir, 'bench.jsonl');
const schema = `bench_${randomBytes(4).toString('hex')}`;
const admin = new PostgresStore(url, { poolSize: 1 });
await admin.query(`CREATE SCHEMA ${schema}`);
const benchUrl = new URL(url);
benchUrl.searchParams.set('application_name', schema);
const store = new PostgresStore(benchUrl.toString(), { poolSize: 1, searchPath: schema });
try {
  process.stderr.write(`generating ${lines.toLocaleString('en-US')} lines…\n`);
  await writeImportFile(file, lines);
  const size = (await stat(file)).size;
  await migrate(store);
  const org = await createOrganization(store, 'Bench', 'org_bench');

  const run = async (label: string) => {
    const hostBefore = await readCpuTimes();
    const nodeBefore = process.cpuUsage();
    const pgBefore = await backendCpuSeconds();
    const started = process.hrtime.bigint();
    const summary: ImportSummary = await importJsonl(store, org.uid, createReadStream(file, { highWaterMark: 256 * 1024 }));
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    const rate = Math.round(lines / seconds);
    const nodeCpu = cpuSeconds(process.cpuUsage(nodeBefore));
    const pgCpu = (await backendCpuSeconds()) - pgBefore;
    const stolen = stolenShare(hostBefore, await readCpuTimes());
    process.stdout.write(
      `${label}: ${lines.toLocaleString('en-US')} lines (${(size / 1e6).toFixed(0)} MB) in ${seconds.toFixed(2)}s = ${rate.toLocaleString('en-US')} lines/s ` +
        `(inserted ${summary.inserted}, updated ${summary.updated}, unchanged ${summary.unchanged})\n` +
        `  CPU: node ${nodeCpu.toFixed(2)}s + PostgreSQL backend ${pgCpu.toFixed(2)}s = ${Math.round(lines / (nodeCpu + pgCpu)).toLocaleString('en-US')} lines per CPU-second` +
        ` (load average ${os.loadavg()[0]?.toFixed(1)} on ${os.cpus().length} CPUs` +
        `${stolen === undefined ? '' : `, ${(stolen * 100).toFixed(1)}% of CPU time taken by other guests of the host`})\n`,
    );
  };
  await run('first import (all new)   ');
  await run('re-import (all unchanged)');
} finally {
  await store.close();
  await admin.query(`DROP SCHEMA ${schema} CASCADE`).catch(() => {});
  await admin.close();
  await rm(dir, { recursive: true, force: true });
}

function cpuSeconds(usage: NodeJS.CpuUsage): number {
  return (usage.user + usage.system) / 1e6;
}

/**
 * CPU time of this benchmark's PostgreSQL backend (same machine only), so the
 * figure means something on a machine that other work keeps busy.
 */
async function backendCpuSeconds(): Promise<number> {
  const rows = await admin.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE application_name = $1', [schema]);
  let total = 0;
  for (const { pid } of rows) {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    total += (Number(fields[11] ?? 0) + Number(fields[12] ?? 0)) / 100;
  }
  return total;
}
