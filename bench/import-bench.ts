// Import throughput on PostgreSQL: generates a JSON Lines file of payment
// methods and credit limits, imports it into a fresh schema, then imports it
// again (every line unchanged). Prints lines per second for both.
//
//   npm run bench:import -- [LINES]      (default 1,000,000)
//   DATABASE_URL=postgres://… picks the server (default postgres://postgres@127.0.0.1:5432/test)
import { createReadStream } from 'node:fs';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { createOrganization } from '../src/auth/organizations.js';
import { importJsonl, type ImportSummary } from '../src/import/index.js';
import { migrate } from '../src/store/migrate.js';
import { PostgresStore } from '../src/store/postgres-store.js';
import { writeImportFile } from './generate-import-file.js';

const lines = Number(process.argv[2] ?? 1_000_000);
const url = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
if (!/^postgres(ql)?:/.test(url)) throw new Error('bench:import measures PostgreSQL: set DATABASE_URL=postgres://…');

const dir = await mkdtemp(path.join(os.tmpdir(), 'import-bench-'));
const file = path.join(dir, 'bench.jsonl');
const schema = `bench_${randomBytes(4).toString('hex')}`;
const admin = new PostgresStore(url, { poolSize: 1 });
await admin.query(`CREATE SCHEMA ${schema}`);
const store = new PostgresStore(url, { poolSize: 2, searchPath: schema });
try {
  process.stderr.write(`generating ${lines.toLocaleString('en-US')} lines…\n`);
  await writeImportFile(file, lines);
  const size = (await stat(file)).size;
  await migrate(store);
  const org = await createOrganization(store, 'Bench', 'org_bench');

  const run = async (label: string) => {
    const started = process.hrtime.bigint();
    const summary: ImportSummary = await importJsonl(store, org.uid, createReadStream(file, { highWaterMark: 256 * 1024 }));
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    const rate = Math.round(lines / seconds);
    process.stdout.write(
      `${label}: ${lines.toLocaleString('en-US')} lines (${(size / 1e6).toFixed(0)} MB) in ${seconds.toFixed(2)}s = ${rate.toLocaleString('en-US')} lines/s ` +
        `(inserted ${summary.inserted}, updated ${summary.updated}, unchanged ${summary.unchanged})\n`,
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
