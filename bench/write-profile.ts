// Where a drawdown's (or a loan's) PostgreSQL time goes (issue 50; docs/performance.md "Writes"): the
// ledger writer driven directly, no HTTP, over ONE pooled connection, so the backend's CPU (from /proc)
// and WAL are the writes' alone:
//   - `alone`: writes one at a time;
//   - `batch`: batches of 32 writes to distinct limits that wait together;
//   - `publish`: moving the outbox rows those writes left into the event log (the publisher's statements).
// Per write: backend CPU µs, WAL bytes, and with pg_stat_statements (the server must preload it)
// each statement's calls, time and WAL (triggers' statements marked ↳; their time is inside their caller's).
// --mode loans: loan creations (POST /api/loans/'s operation) of 0.01 on the same 1,000 limits, each paid
// out to its entity's payment method (created here once, through the import).
//
//   node --import tsx bench/write-profile.ts [--tree DIR] [--batches 40] [--mode drawdowns|loans]   (DATABASE_URL: a database of its own)
//
// --tree runs another tree's ledger (bench/floor-trees.ts builds one: `before` figures from its sources).
import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { statementCosts, statementStatsReady, walPosition } from './server-cost.js';

const { values } = parseArgs({ options: { tree: { type: 'string' }, batches: { type: 'string', default: '40' }, mode: { type: 'string', default: 'drawdowns' } } });
if (values.mode !== 'drawdowns' && values.mode !== 'loans') throw new Error(`--mode drawdowns or loans, not ${values.mode}`);
const loansMode = values.mode === 'loans';
const unit = loansMode ? 'loan' : 'drawdown';
const tree = values.tree ?? fileURLToPath(new URL('..', import.meta.url));
const from = (file: string) => import(path.join(tree, file));
const url = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5499/bench_profile';

const { PostgresStore } = await from('src/store/postgres-store.ts');
const { migrate } = await from('src/store/migrate.ts');
const { ensureWriteLimits, WRITES_ORG_UID, SPREAD_LIMITS } = await from('bench/write-scenarios.ts');
const { findOrganization } = await from('src/organizations/organizations.ts');
const { createApiKey } = await from('src/auth/api-keys.ts');
const ledger = await from('src/ledger/index.ts');
const { creditLimits } = await from('src/resources/credit-limits.ts');
const { loans } = await from('src/resources/loans.ts');
const { loanCreation } = await from('src/ledger/loan-operations.ts');
const { importJsonl } = await from('src/import/index.ts');
// A release before events has no publication: nothing to publish.
const publishBacklog = (await from('bench/load.ts')).publishBacklog ?? (async () => undefined);

const BATCH = 32;
const store = new PostgresStore(url, { poolSize: 1 });
await migrate(store);
await ensureWriteLimits(store);
const org = await findOrganization(store, WRITES_ORG_UID);
const apiKey = await createApiKey(store, WRITES_ORG_UID, undefined, 'write');
const writer = new ledger.LedgerWriter(store, { idempotencyTtlHours: 24, queue: { concurrency: 1 } });
const view = ledger.limitViewOf(creditLimits);
const loanViews = { loans, limits: creditLimits };
let next = 0;
const write = (limit: number) => {
  const key = randomUUID();
  const k = limit % SPREAD_LIMITS;
  const operation = loansMode
    ? loanCreation(loanViews, { orgId: org.id, keyId: apiKey.id, creditLimit: `cl_bench_w_${k}`, paymentMethod: `pm_bench_w_${k}`, principal: '0.01' })
    : ledger.entryOperation(view, { orgId: org.id, kind: 'drawdown', id: ledger.newLedgerId('drawdown'), limit: `cl_bench_w_${k}`, amount: '0.01', keyId: apiKey.id });
  return writer.write({ operation, idempotency: { key, keyId: apiKey.id }, requestId: `req-${key}` }).then((answer: { status: number }) => {
    // A refusal costs less than a write: a run that measured some would be wrong.
    if (answer.status !== 201) throw new Error(`a ${unit} was answered ${answer.status}, not 201`);
  });
};

/** Each spread limit's entity gets a payment method a loan can be paid out to (the import upserts: a second run changes nothing). */
async function ensureLoanMethods(): Promise<void> {
  const [row] = (await store.query("SELECT count(*)::int AS n FROM payment_methods WHERE org_id = $1 AND uid LIKE 'pm_bench_w_%'", [org.id])) as { n: number }[];
  if (row?.n === SPREAD_LIMITS) return;
  const lines = Array.from(
    { length: SPREAD_LIMITS },
    (_, k) => `${JSON.stringify({ object: 'payment_method', uid: `pm_bench_w_${k}`, entity: `ent_bench_w_${k}`, type: 'ACH', currency: 'USD', last_2: '00' })}\n`,
  );
  await importJsonl(store, WRITES_ORG_UID, Readable.from(lines));
}
if (loansMode) await ensureLoanMethods();

async function backendCpuSeconds(): Promise<number> {
  const [row] = (await store.query('SELECT pg_backend_pid() AS pid')) as { pid: number }[];
  const stat = await readFile(`/proc/${row?.pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

async function phase(name: string, writes: number, work: () => Promise<void>): Promise<{ cpuUs: number; walBytes: number }> {
  await store.exec(`VACUUM (ANALYZE) credit_limits, ledger_entries, idempotency_keys${loansMode ? ', loans' : ''}`);
  const stats = await statementStatsReady(store);
  const cpu0 = await backendCpuSeconds();
  const wal0 = await walPosition(store);
  await work();
  const wal1 = await walPosition(store);
  const cpu1 = await backendCpuSeconds();
  const per = (n: number) => (n / writes).toFixed(1).padStart(8);
  process.stdout.write(`\n${name}: ${writes} ${unit}s; per ${unit}: backend CPU ${per((cpu1 - cpu0) * 1e6)} µs, WAL ${per(Number(wal1 - wal0))} B\n`);
  const totals = { cpuUs: (cpu1 - cpu0) * 1e6, walBytes: Number(wal1 - wal0) };
  if (!stats) return totals;
  for (const s of await statementCosts(store, 22)) {
    if (/VACUUM|pg_stat_statements|pg_backend_pid|pg_current_wal/.test(s.query)) continue;
    const text = s.query.replace(/\s+/g, ' ').slice(0, 96);
    process.stdout.write(`${per(s.totalMs * 1000)} µs ${(s.calls / writes).toFixed(3).padStart(7)} calls ${per(s.walBytes)} WAL B ${s.topLevel ? ' ' : '↳'} ${text}\n`);
  }
  return totals;
}

const batches = Number(values.batches);
// Warm: the connection prepares its statements (a lone write, and a joined batch).
await write(next++);
await Promise.all(Array.from({ length: BATCH }, () => write(next++)));
await publishBacklog(store, () => undefined);
const alone = await phase('alone', batches * 8, async () => {
  for (let i = 0; i < batches * 8; i += 1) await write(next++);
});
const joined = await phase(`${batches} × (1 alone + a batch of ${BATCH})`, batches * (BATCH + 1), async () => {
  for (let i = 0; i < batches; i += 1) {
    // The first starts at once; the 32 behind it wait for the one slot and go together.
    const lead = write(next++);
    await Promise.all([lead, ...Array.from({ length: BATCH }, () => write(next++))]);
  }
});
const perAlone = { cpuUs: alone.cpuUs / (batches * 8), walBytes: alone.walBytes / (batches * 8) };
process.stdout.write(
  `\nin a batch of ${BATCH} (the lone lead's cost taken out): backend CPU ${((joined.cpuUs - batches * perAlone.cpuUs) / (batches * BATCH)).toFixed(1)} µs, ` +
    `WAL ${((joined.walBytes - batches * perAlone.walBytes) / (batches * BATCH)).toFixed(1)} B per ${unit}\n`,
);
const pending = (await store.query("SELECT CASE WHEN to_regclass('event_outbox') IS NULL THEN '0' ELSE (SELECT count(*)::text FROM event_outbox) END AS n").catch(() => [{ n: '0' }])) as { n: string }[];
await phase(`publish (${pending[0]?.n} outbox rows)`, batches * (BATCH + 1) + batches * 8, () => publishBacklog(store, () => undefined));
await store.close();
