import { beforeAll, describe, expect, it } from 'vitest';
import { planOf, REFERENCE_TABLES } from '../../src/store/citus-distribution.js';
import { RESOURCES } from '../../src/resources/index.js';
import type { QueryOptions, Store, Transaction } from '../../src/store/store.js';
import { describeEachStore } from '../helpers/stores.js';
import { checkStatement, loadParser, temporaryTablesCreatedBy, type ShardingContext } from './sharding-rules.js';
import { FLEET_WIDE_STATEMENTS, runEventWorkload } from './event-workload.js';
import { runStatementWorkload } from './statement-workload.js';

/** A Store that records every statement text it is given, in transactions too. */
function recording(store: Store): { store: Store; statements: string[] } {
  const statements: string[] = [];
  const record = (sql: string) => statements.push(sql.replace(/\s+/g, ' ').trim());
  const wrapTx = (tx: Transaction): Transaction => ({
    query: (sql, params, options) => (record(sql), tx.query(sql, params, options)),
    exec: (sql) => (record(sql), tx.exec(sql)),
    copyFrom: (target, chunks) => (record(`COPY ${target}`), tx.copyFrom(target, chunks)),
    queryAtCommit: (sql, params) => (record(sql), tx.queryAtCommit(sql, params)),
    commitWith: (statements) => (statements.forEach((statement) => record(statement.sql)), tx.commitWith(statements)),
  });
  const wrapped: Store = {
    kind: store.kind,
    description: store.description,
    query: <Row>(sql: string, params?: readonly unknown[], options?: QueryOptions) => (record(sql), store.query<Row>(sql, params, options)),
    exec: (sql) => (record(sql), store.exec(sql)),
    transaction: (fn, options) => store.transaction((tx) => fn(wrapTx(tx)), options),
    ping: () => store.ping(),
    close: () => store.close(),
  };
  return { store: wrapped, statements };
}

describe('the sharding rules (test/topology/sharding-rules.ts)', () => {
  beforeAll(() => loadParser());
  const context: ShardingContext = { distributed: new Set(['payment_methods', 'credit_limits', 'ledger_entries', 'row_counts', 'idempotency_keys']), temporary: new Set(['import_stage']) };
  const rules = (sql: string) => checkStatement(sql, context).map((finding) => `${finding.rule}: ${finding.detail}`);

  it('refuses what the code did before (each failed on a real Citus cluster) and accepts its replacement', () => {
    // The page join's outer table had no org_id: every list scattered to all shards.
    expect(rules('SELECT t.uid FROM payment_methods t JOIN (SELECT id FROM payment_methods WHERE org_id = $1 ORDER BY id LIMIT 10) page USING (id)')).toEqual([
      'unconstrained: payment_methods t',
    ]);
    expect(rules('SELECT t.uid FROM payment_methods t JOIN (SELECT id FROM payment_methods WHERE org_id = $1 ORDER BY id LIMIT 10) page USING (id) WHERE t.org_id = $1')).toEqual([]);
    // The import locked limits without org_id, and joined its temporary tables with the organization's.
    expect(rules('SELECT 1 FROM credit_limits WHERE id IN (SELECT limit_id FROM import_stage) ORDER BY id FOR UPDATE')).toEqual([
      'temp-join: import_stage with credit_limits',
      'for-update: credit_limits',
    ]);
    expect(rules('SELECT 1 FROM credit_limits WHERE org_id = $1 AND id = ANY ($2::bigint[]) ORDER BY id FOR UPDATE')).toEqual([]);
    expect(rules('UPDATE credit_limits l SET outstanding = l.outstanding + m.delta FROM import_stage m WHERE l.org_id = $1 AND l.id = m.limit_id')).toEqual([
      'temp-join: import_stage with credit_limits',
    ]);
    expect(rules('INSERT INTO credit_limits (org_id, uid) SELECT $1, uid FROM import_stage')).toEqual([]);
    expect(rules('INSERT INTO credit_limits (org_id, uid) SELECT org_id, uid FROM import_stage')).toEqual([
      'unconstrained: INSERT INTO credit_limits without org_id as a parameter',
    ]);
    // The idempotency claim's now() in DO UPDATE, the ledger's to_char in RETURNING.
    expect(
      rules(
        'INSERT INTO idempotency_keys (org_id, idempotency_key) VALUES ($1, $2) ON CONFLICT (org_id, idempotency_key) DO UPDATE SET created_at = now() WHERE idempotency_keys.expires_at <= now()',
      ),
    ).toEqual(['function-in-returning: ON CONFLICT DO UPDATE of idempotency_keys: now()', 'function-in-returning: ON CONFLICT DO UPDATE of idempotency_keys: now()']);
    expect(rules("UPDATE credit_limits t SET outstanding = 1 WHERE t.org_id = $1 RETURNING to_char(t.updated_at, 'YYYY')")).toEqual([
      'function-in-returning: RETURNING of credit_limits: to_char()',
    ]);
  });
});

describeEachStore('sharding-ready schema and statements', (store) => {
  beforeAll(() => loadParser());

  it('includes org_id in every primary key, unique constraint and foreign key of every sharded table', async () => {
    const constraints = await store().query<{ table_name: string; name: string; kind: string; columns: string[] }>(
      `SELECT c.conrelid::regclass::text AS table_name, c.conname AS name, c.contype::text AS kind,
              array(SELECT a.attname::text FROM unnest(c.conkey) k JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k) AS columns
         FROM pg_constraint c JOIN pg_class t ON t.oid = c.conrelid
        WHERE t.relnamespace = current_schema()::regnamespace AND c.contype IN ('p', 'u', 'f') AND t.relkind = 'r'`,
    );
    const sharded = constraints.filter((c) => !REFERENCE_TABLES.includes(c.table_name.replace(/^.*\./, '')));
    expect(sharded.length).toBeGreaterThan(5);
    const without = sharded.filter((c) => !c.columns.includes('org_id')).map((c) => `${c.table_name}.${c.name} (${c.columns.join(', ')})`);
    expect(without).toEqual([]);
  });

  it('places every table of the schema: the reference tables, every other one distributed by org_id', async () => {
    const plan = await planOf(store());
    expect(plan.filter((p) => p.placement === 'reference').map((p) => p.table)).toEqual(REFERENCE_TABLES);
    expect(plan.filter((p) => p.placement === 'distributed').map((p) => p.table)).toEqual(
      expect.arrayContaining([...RESOURCES.map((resource) => resource.table), 'row_counts', 'idempotency_keys']),
    );
  });

  it('keeps every statement of the list engine, the ledger, HTTP writes and the import to one organization (a single-shard router query on Citus)', async () => {
    const { store: recorded, statements } = recording(store());
    await runStatementWorkload(store(), recorded);
    const data = dataStatements(statements);
    expect(data.length).toBeGreaterThan(60);
    const { findings, temporary } = await shardingFindings(data);
    expect(temporary).toBeGreaterThan(5);
    expect(findings).toEqual([]);
  });

  it('keeps every statement of events and webhooks to one organization, but those that find which organizations have work', async () => {
    const { store: recorded, statements } = recording(store());
    await runEventWorkload(store(), recorded);
    const data = dataStatements(statements);
    const fleetWide = data.filter((sql) => FLEET_WIDE_STATEMENTS.some((pattern) => pattern.test(sql)));
    expect(new Set(fleetWide).size).toBe(1); // the deliverer's round (the publisher's sweep and the prune's list run in serve only)
    const { findings } = await shardingFindings(data.filter((sql) => !fleetWide.includes(sql)));
    expect(findings).toEqual([]);
    expect(data.some((sql) => /webhook_deliveries/.test(sql) && /FOR UPDATE|UPDATE webhook_deliveries/.test(sql))).toBe(true);
  });

  const dataStatements = (statements: readonly string[]) => statements.filter((sql) => !/^(SET|BEGIN|COMMIT|ROLLBACK)\b/i.test(sql));

  async function shardingFindings(data: readonly string[]): Promise<{ findings: string[]; temporary: number }> {
    const plan = await planOf(store());
    const context: ShardingContext = {
      distributed: new Set(plan.filter((p) => p.placement === 'distributed').map((p) => p.table)),
      temporary: new Set(data.flatMap(temporaryTablesCreatedBy)),
    };
    const findings = data.flatMap((sql) => checkStatement(sql, context));
    return {
      findings: [...new Set(findings.map((finding) => `${finding.rule}: ${finding.detail}\n    in: ${finding.sql.slice(0, 400)}`))],
      temporary: context.temporary.size,
    };
  }
});
