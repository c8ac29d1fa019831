import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOrganization } from '../../src/organizations/organizations.js';
import { openStore, parseDatabaseUrl } from '../../src/store/open-store.js';
import type { Store } from '../../src/store/store.js';
import { postgresUrlWithSchema, runCli, spawnCli } from '../helpers/cli.js';
import { dumpAllTables, importLines, SAMPLE_LINES } from '../helpers/import-lines.js';
import { pgliteDirectoryFromTemplate, TEST_SHARED_BUFFERS } from '../helpers/pglite-template.js';
import { openPostgresTestStore } from '../helpers/stores.js';
import { createTenant } from '../helpers/tenants.js';

const ACCOUNT = '000123456789';
const FILE_LINES = SAMPLE_LINES.map((line) => JSON.stringify(line)).join('\n') + '\n';

// Each command is a fresh process (PGlite start-up): allow them time on a busy machine.
describe('lending-api import, draw, repay, demo (on a pglite directory)', { timeout: 600_000 }, () => {
  let dir: string;
  let url: string;

  /** Opens the CLI's embedded store while no CLI process holds it. */
  async function withDirectStore<T>(fn: (store: Store) => Promise<T>): Promise<T> {
    const location = parseDatabaseUrl(url);
    if ('error' in location) throw new Error(location.error);
    const store = await openStore(location, { pgliteSharedBuffers: TEST_SHARED_BUFFERS });
    try {
      return await fn(store);
    } finally {
      await store.close();
    }
  }

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'import-cli-'));
    url = `pglite://${path.join(dir, 'db')}`;
    await writeFile(path.join(dir, 'data.jsonl'), FILE_LINES);
    // In-process: `org create` has its own tests (org-and-keys), and a CLI process costs seconds of CPU.
    await pgliteDirectoryFromTemplate(path.join(dir, 'db'), (store) => createOrganization(store, 'Acme', 'acme'));
  });

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('imports a file with a human summary, then re-imports it with --json and changes nothing', async () => {
    const first = await runCli(['import', '--org', 'acme', path.join(dir, 'data.jsonl')], url);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toMatch(/imported 4 lines into acme/);
    expect(first.stdout).toMatch(/payment methods: 1 inserted, 0 updated, 0 unchanged/);
    expect(first.stdout).toMatch(/ledger entries: {2}2 recorded, 0 already recorded/);

    const again = await runCli(['import', '--org', 'acme', '--json', '-'], url, FILE_LINES);
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ lines: 4, inserted: 0, updated: 0, unchanged: 2, ledger_entries: { applied: 0, unchanged: 2 } });
    expect(first.stdout + first.stderr + again.stdout + again.stderr).not.toContain(ACCOUNT.slice(0, -2));
  });

  it('refuses a file with invalid lines: exit 1, each line on stderr, --json listing on stdout, nothing written', async () => {
    const before = await withDirectStore(dumpAllTables);
    const bad = [
      JSON.stringify({ ...SAMPLE_LINES[0], uid: 'pm_new' }),
      JSON.stringify({ ...SAMPLE_LINES[0], currency: 'XXX', account_number: '555566667777' }),
      '{"object":"drawdown","limit":"cl_1","amount":"1.001"}',
    ].join('\n');

    const human = await runCli(['import', '--org', 'acme', '-'], url, bad);
    const json = await runCli(['import', '--org', 'acme', '--json', '-'], url, bad);

    expect(human.code).toBe(1);
    expect(human.stdout).toBe('');
    expect(human.stderr).toMatch(/2 invalid lines; nothing was imported/);
    expect(human.stderr).toMatch(/line 2: currency must be an active ISO 4217 currency code, got 'XXX'/);
    expect(human.stderr).toMatch(/line 3: amount must have at most 2 decimal places/);
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout)).toMatchObject({ error: 'invalid_lines', invalid_lines: 2, errors: [{ line: 2 }, { line: 3 }], not_listed: 0 });
    expect(human.stdout + human.stderr + json.stdout + json.stderr).not.toContain('5555666677');
    expect(await withDirectStore(dumpAllTables)).toBe(before);
  });

  it('fails with a clear message for a missing file or an unknown organization', async () => {
    const missing = await runCli(['import', '--org', 'acme', path.join(dir, 'nope.jsonl')], url);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/cannot read .*nope.jsonl: no such file/);
    const unknown = await runCli(['import', '--org', 'ghost', path.join(dir, 'data.jsonl')], url);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/no organization 'ghost'/);
  });

  it('draws and repays, idempotent by --id; refusals exit non-zero and change nothing', async () => {
    const draw = await runCli(['draw', '--org', 'acme', '--limit', 'cl_1', '--amount', '500', '--id', 'cli_d1'], url);
    expect(draw.code, draw.stderr).toBe(0);
    expect(draw.stdout).toMatch(/recorded drawdown cli_d1 of 500.00 on cl_1\n {2}cl_1: outstanding 1500.00, balance 48500.00, capacity 50000.00/);

    const replay = await runCli(['draw', '--org', 'acme', '--limit', 'cl_1', '--amount', '500', '--id', 'cli_d1', '--json'], url);
    expect(replay.code, replay.stderr).toBe(0);
    expect(JSON.parse(replay.stdout)).toMatchObject({ id: 'cli_d1', object: 'drawdown', applied: false, outstanding: 1500, balance: 48500 });

    const before = await withDirectStore(dumpAllTables);
    const tooMuch = await runCli(['draw', '--org', 'acme', '--limit', 'cl_1', '--amount', '48500.01'], url);
    expect(tooMuch.code).toBe(1);
    expect(tooMuch.stderr).toMatch(/drawdown of 48500.01 refused: it exceeds the balance of cl_1 \(balance 48500.00/);
    const overRepay = await runCli(['repay', '--org', 'acme', '--limit', 'cl_1', '--amount', '1500.01', '--json'], url);
    expect(overRepay.code).toBe(1);
    expect(JSON.parse(overRepay.stdout)).toMatchObject({ error: 'repayment_exceeds_outstanding' });
    expect(overRepay.stderr).toMatch(/repayment of 1500.01 refused/);
    const conflict = await runCli(['repay', '--org', 'acme', '--limit', 'cl_1', '--amount', '5', '--id', 'cli_d1'], url);
    expect(conflict.code).toBe(1);
    expect(conflict.stderr).toMatch(/ledger entry 'cli_d1' already exists with different content/);
    const badAmount = await runCli(['draw', '--org', 'acme', '--limit', 'cl_1', '--amount', '-3'], url);
    expect(badAmount.code).toBe(1);
    expect(badAmount.stderr).toMatch(/--amount must be greater than 0, got '-3'/);
    const future = await runCli(['draw', '--org', 'acme', '--limit', 'cl_1', '--amount', '1', '--at', '2099-01-01', '--json'], url);
    expect(future.code).toBe(1);
    expect(JSON.parse(future.stdout)).toMatchObject({ error: 'invalid_entry' });
    expect(future.stderr).toMatch(/the entry's time 2099-01-01T00:00:00.000000Z is in the future/);
    expect(await withDirectStore(dumpAllTables)).toBe(before);

    // Backdated: the entry keeps its time, the limit is stamped with the time of the write.
    const backdated = await runCli(['draw', '--org', 'acme', '--limit', 'cl_1', '--amount', '1', '--at', '2020-01-01', '--json'], url);
    expect(backdated.code, backdated.stderr).toBe(0);
    const entry = JSON.parse(backdated.stdout) as { at: string; updated_at: string };
    expect(entry.at).toBe('2020-01-01T00:00:00.000000Z');
    expect(entry.updated_at > new Date(Date.now() - 3_600_000).toISOString()).toBe(true);

    const repay = await runCli(['repay', '--org', 'acme', '--limit', 'cl_1', '--amount', '1501', '--json'], url);
    expect(repay.code, repay.stderr).toBe(0);
    expect(JSON.parse(repay.stdout)).toMatchObject({ object: 'repayment', applied: true, outstanding: 0, balance: 50000 });
  });

  it('loads the demo data through the import path', async () => {
    const demo = await runCli(['demo', '--json'], url);
    expect(demo.code, demo.stderr).toBe(0);
    const result = JSON.parse(demo.stdout) as { entities: number; payment_methods: number; credit_limits: number };
    const counts = await withDirectStore((store) =>
      store.query<{ entities: string; methods: string; limits: string; drawn: string }>(
        `SELECT (SELECT count(*) FROM entities x WHERE x.org_id = o.id)::text AS entities,
                (SELECT count(*) FROM payment_methods p WHERE p.org_id = o.id)::text AS methods,
                (SELECT count(*) FROM credit_limits l WHERE l.org_id = o.id)::text AS limits,
                (SELECT count(*) FROM credit_limits l WHERE l.org_id = o.id AND l.outstanding > 0)::text AS drawn
           FROM organizations o WHERE o.uid = 'org_demo'`,
      ),
    );
    expect(result.entities).toBe(12);
    expect(counts[0]).toEqual({
      entities: String(result.entities),
      methods: String(result.payment_methods),
      limits: String(result.credit_limits),
      drawn: expect.any(String),
    });
    expect(Number(counts[0]?.drawn)).toBeGreaterThan(0);
  });
});

// Killing a process mid-transaction is about the server's rollback: PostgreSQL.
const databaseUrl = process.env.DATABASE_URL ?? '';
if (/^postgres(ql)?:/.test(databaseUrl)) {
  describe('lending-api import killed mid-file (on postgres)', () => {
    let store: Store;
    beforeAll(async () => {
      store = await openPostgresTestStore(databaseUrl);
    });
    afterAll(async () => {
      await store.close();
    });

    it('leaves no partial data when SIGKILLed after merging some batches', async () => {
      const tenant = await createTenant(store);
      await importLines(store, tenant.org.uid, SAMPLE_LINES);
      const before = await dumpAllTables(store);
      const [{ schema } = { schema: '' }] = await store.query<{ schema: string }>('SELECT current_schema() AS schema');
      const applicationName = `import-kill-${randomBytes(4).toString('hex')}`;
      const child = spawnCli(['import', '--org', tenant.org.uid, '-'], postgresUrlWithSchema(databaseUrl, schema, applicationName));
      child.stdin.on('error', () => {}); // EPIPE once it is killed
      let stderr = '';
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
      const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_code, signal) => resolve(signal)));

      // Half a file: updates of existing records, new records and ledger lines; stdin stays open.
      const lines: string[] = [JSON.stringify({ ...SAMPLE_LINES[0], entity: 'changed' })];
      for (let i = 0; i < 20_000; i += 1) {
        lines.push(JSON.stringify({ object: 'payment_method', uid: `pm_k${i}`, entity: 'e', type: 'ACH', currency: 'USD', last_2: '01' }));
      }
      lines.push(JSON.stringify({ object: 'drawdown', id: 'dd_kill', limit: 'cl_1', amount: '10' }));
      child.stdin.write(lines.join('\n') + '\n');

      // Uncommitted rows already take room in the table: the import has merged batches.
      const tableSize = async () => {
        const [row] = await store.query<{ size: string }>(`SELECT pg_relation_size('payment_methods')::text AS size`);
        return Number(row?.size);
      };
      const sizeBefore = await tableSize();
      await waitFor(async () => (await tableSize()) > sizeBefore, `the import to have merged a batch (stderr: ${stderr})`);
      child.kill('SIGKILL');
      expect(await exited).toBe('SIGKILL');
      await waitFor(async () => (await store.query('SELECT 1 FROM pg_stat_activity WHERE application_name = $1', [applicationName])).length === 0, 'its backend to end');

      expect(await dumpAllTables(store)).toBe(before);
    });
  });
}

async function waitFor(check: () => Promise<boolean>, what: string, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
