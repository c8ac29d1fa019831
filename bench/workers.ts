/**
 * Measures `serve --workers N`: starts the real server (compiled, as
 * production runs it) with 1 worker, then with 2 (or the counts given), and
 * drives each with autocannon.
 *
 *   DATABASE_URL=postgres://… node --import tsx bench/workers.ts [1 2 …]
 *
 * DATABASE_URL must be a PostgreSQL database the benchmark may write to: it
 * migrates it, adds one organization with 1,000 payment methods, and leaves
 * them there. Rate limiting is off and logging at warn, as for any benchmark.
 */
import autocannon from 'autocannon';
import { spawn } from 'node:child_process';
import { createApiKey } from '../src/auth/api-keys.js';
import { createOrganization } from '../src/organizations/organizations.js';
import { migrate } from '../src/store/migrate.js';
import { PostgresStore } from '../src/store/postgres-store.js';
import { compiledEntry } from './service.js';

const url = process.env.DATABASE_URL ?? '';
if (!/^postgres(ql)?:/.test(url)) throw new Error('set DATABASE_URL to a PostgreSQL database the benchmark may write to');
const counts = process.argv.slice(2).map(Number);
const workerCounts = counts.length > 0 ? counts : [1, 2];
const seconds = Number(process.env.BENCH_SECONDS ?? 10);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 50);
const entry = await compiledEntry();

const store = new PostgresStore(url, { poolSize: 2 });
await migrate(store);
const org = await createOrganization(store, 'Bench', `org_bench_${Date.now()}`);
const key = await createApiKey(store, org.uid);
await store.query(
  `INSERT INTO payment_methods (org_id, uid, entity, type, currency, last_2, created_at, updated_at)
   SELECT $1, 'pm_bench_' || g, 'ent_' || (g % 50), 'ACH', 'USD', '42', now() - g * interval '1 second', now()
     FROM generate_series(1, 1000) g`,
  [org.id],
);
await store.close();
const authorization = `Basic ${Buffer.from(`${org.uid}:${key.key}`).toString('base64')}`;

for (const workers of workerCounts) {
  const child = spawn(process.execPath, [entry, 'serve', '--port', '0', '--json', '--workers', String(workers)], {
    env: { ...process.env, RATE_LIMIT_PER_MINUTE: '0', LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  const base = await new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const match = /"url": "([^"]+)"/.exec(out);
      if (match?.[1]) resolve(match[1]);
    });
    child.once('exit', (code) => reject(new Error(`serve exited with ${code}`)));
  });
  const result = await autocannon({
    url: `${base}/api/methods/?page=2&entity=ent_7`,
    headers: { authorization },
    connections,
    duration: seconds,
  });
  child.kill('SIGTERM');
  await new Promise((resolve) => child.once('exit', resolve));
  const errors = result.non2xx + result.errors;
  console.log(
    `workers=${workers}: ${Math.round(result.requests.average)} req/s, latency p50 ${result.latency.p50} ms, p99 ${result.latency.p99} ms, non-2xx/errors ${errors}`,
  );
}
