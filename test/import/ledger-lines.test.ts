import { expect, it } from 'vitest';
import { ImportError, importJsonl } from '../../src/import/index.js';
import { applyLedgerEntry, LedgerError, type LedgerResult } from '../../src/ledger/index.js';
import { anotherProcessLedger } from '../helpers/ledger.js';
import { PostgresStore } from '../../src/store/postgres-store.js';
import type { Store } from '../../src/store/store.js';
import { dumpAllTables, importLines } from '../helpers/import-lines.js';
import { lockWaiters } from '../helpers/lock-waits.js';
import { describeEachStore } from '../helpers/stores.js';
import { createTenant } from '../helpers/tenants.js';

const LIMIT = { object: 'credit_limit', entity: 'e', currency: 'USD', rate: '0' } as const;

async function limitState(store: Store, orgId: string, uid: string) {
  const [row] = await store.query<{ outstanding: string; ledger: string; entries: string; updated_at: string }>(
    `SELECT l.outstanding::text AS outstanding,
            (SELECT coalesce(sum(CASE WHEN kind = 'drawdown' THEN amount ELSE -amount END), 0) FROM ledger_entries e WHERE e.org_id = l.org_id AND e.limit_id = l.id)::text AS ledger,
            (SELECT count(*) FROM ledger_entries e WHERE e.org_id = l.org_id AND e.limit_id = l.id)::text AS entries,
            to_char(l.updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS updated_at
       FROM credit_limits l WHERE l.org_id = $1 AND l.uid = $2`,
    [orgId, uid],
  );
  return row;
}

describeEachStore('import of ledger lines', (store, kind) => {
  it('applies many lines of one limit, across batch boundaries, exactly as one batch would', async () => {
    const lines = [
      { ...LIMIT, uid: 'cl_a', capacity: '1000.00' },
      { ...LIMIT, uid: 'cl_b', capacity: '50.00' },
      ...Array.from({ length: 40 }, (_, i) => ({
        object: i % 3 === 2 ? 'repayment' : 'drawdown',
        id: `e_${i}`,
        limit: i % 4 === 0 ? 'cl_b' : 'cl_a',
        // A repayment (under 1.00) always follows drawdowns of its limit (at least 1.00 each).
        amount: `${i % 3 === 2 ? 0 : (i % 5) + 1}.${String(((i * 13) % 99) + 1).padStart(2, '0')}`,
      })),
    ];
    const states = [];
    for (const batchLines of [3, 20_000]) {
      const tenant = await createTenant(store());
      const summary = await importLines(store(), tenant.org.uid, lines, { batchLines });
      expect(summary.ledger_entries).toEqual({ applied: 40, unchanged: 0 });
      states.push([(await limitState(store(), tenant.org.id, 'cl_a'))?.outstanding, (await limitState(store(), tenant.org.id, 'cl_b'))?.outstanding]);
    }
    const cents = (amount: string) => Number(amount.replace('.', ''));
    const expected = (uid: string) =>
      lines.slice(2).reduce((sum, line) => ('limit' in line && line.limit === uid ? sum + (line.object === 'drawdown' ? 1 : -1) * cents(line.amount) : sum), 0);
    expect(states).toEqual([
      [(expected('cl_a') / 100).toFixed(2), (expected('cl_b') / 100).toFixed(2)],
      [(expected('cl_a') / 100).toFixed(2), (expected('cl_b') / 100).toFixed(2)],
    ]);
  });

  it('applies lines that name a limit only a later batch creates, beside lines whose limit is already stored', async () => {
    const tenant = await createTenant(store());
    await importLines(store(), tenant.org.uid, [{ ...LIMIT, uid: 'cl_stored', capacity: '100.00' }]);
    const lines = [
      { object: 'drawdown', id: 'late_1', limit: 'cl_late', amount: '30.00' }, // batch 1: cl_late comes in batch 3
      { object: 'drawdown', id: 'stored_1', limit: 'cl_stored', amount: '10.00' },
      { object: 'repayment', id: 'late_2', limit: 'cl_late', amount: '5.00' }, // batch 2
      { object: 'drawdown', id: 'nowhere', limit: 'cl_nowhere', amount: '1.00' },
      { ...LIMIT, uid: 'cl_late', capacity: '40.00' }, // batch 3
    ];

    const error = (await importLines(store(), tenant.org.uid, lines, { batchLines: 2 }).catch((e: unknown) => e)) as ImportError;
    expect(error.errors).toEqual([{ line: 4, reason: "no credit limit 'cl_nowhere' in this organization or this file" }]);

    const summary = await importLines(store(), tenant.org.uid, lines.filter((line) => !('id' in line && line.id === 'nowhere')), { batchLines: 2 });
    expect(summary.ledger_entries).toEqual({ applied: 3, unchanged: 0 });
    expect(await limitState(store(), tenant.org.id, 'cl_late')).toMatchObject({ outstanding: '25.00', ledger: '25.00', entries: '2' });
    expect(await limitState(store(), tenant.org.id, 'cl_stored')).toMatchObject({ outstanding: '10.00', ledger: '10.00', entries: '1' });
  });

  it('keeps the first line of an id whose repeats come in later batches: the same content once, other content an error naming the first line', async () => {
    const tenant = await createTenant(store());
    const lines = [
      { ...LIMIT, uid: 'cl_rep', capacity: '100.00' },
      { object: 'drawdown', id: 'rep_1', limit: 'cl_rep', amount: '10.00' }, // batch 1
      { object: 'drawdown', id: 'rep_2', limit: 'cl_rep', amount: '1.00' },
      { object: 'drawdown', id: 'rep_1', limit: 'cl_rep', amount: '10.00' }, // batch 2: the same as line 2
      { object: 'drawdown', id: 'rep_3', limit: 'cl_rep', amount: '2.00' },
    ];
    const summary = await importLines(store(), tenant.org.uid, lines, { batchLines: 2 });
    expect(summary.ledger_entries).toEqual({ applied: 3, unchanged: 0 });
    expect(await limitState(store(), tenant.org.id, 'cl_rep')).toMatchObject({ outstanding: '13.00', entries: '3' });

    const other = await createTenant(store());
    const changed = [...lines, { object: 'drawdown', id: 'rep_2', limit: 'cl_rep', amount: '5.00' }]; // batch 3: line 3's id
    const error = (await importLines(store(), other.org.uid, changed, { batchLines: 2 }).catch((e: unknown) => e)) as ImportError;
    expect(error.errors).toEqual([{ line: 6, reason: "ledger id 'rep_2' is used on line 3 with different content" }]);
  });

  it('reports every unknown limit and every reused id with other content, whichever batch holds them: a limit first named after the first batch, a reuse inside one batch, a line that is both', async () => {
    const tenant = await createTenant(store());
    const lines = [
      { ...LIMIT, uid: 'cl_a', capacity: '100.00' },
      { object: 'drawdown', id: 'd1', limit: 'cl_a', amount: '10.00' }, // batch 1: every limit found
      { object: 'drawdown', id: 'd2', limit: 'cl_a', amount: '1.00' },
      { object: 'drawdown', id: 'd2', limit: 'cl_a', amount: '2.00' }, // batch 2: line 3's id, other amount
      { object: 'drawdown', id: 'd3', limit: 'cl_gone', amount: '1.00' },
      { object: 'drawdown', id: 'd1', limit: 'cl_gone', amount: '10.00' }, // batch 3: line 2's id, and no such limit
      { object: 'repayment', id: 'd4', limit: 'cl_gone', amount: '1.00' }, // batch 4
    ];
    const error = (await importLines(store(), tenant.org.uid, lines, { batchLines: 2 }).catch((e: unknown) => e)) as ImportError;
    expect(error).toBeInstanceOf(ImportError);
    const gone = "no credit limit 'cl_gone' in this organization or this file";
    expect([...error.errors].sort((a, b) => a.line - b.line || a.reason.localeCompare(b.reason))).toEqual([
      { line: 4, reason: "ledger id 'd2' is used on line 3 with different content" },
      { line: 5, reason: gone },
      { line: 6, reason: "ledger id 'd1' is used on line 2 with different content" },
      { line: 6, reason: gone },
      { line: 7, reason: gone },
    ]);
    expect(error.total).toBe(5);
    expect(await limitState(store(), tenant.org.id, 'cl_a')).toBeUndefined(); // nothing written, the limit of line 1 neither
  });

  it('refuses a repayment before the drawdown it would repay, even when the lines of the batch add up', async () => {
    const tenant = await createTenant(store());
    await importLines(store(), tenant.org.uid, [{ ...LIMIT, uid: 'cl_r', capacity: '100.00' }]);
    const before = await dumpAllTables(store());

    const error = (await importLines(store(), tenant.org.uid, [
      { object: 'repayment', id: 'r1', limit: 'cl_r', amount: '10.00' },
      { object: 'drawdown', id: 'd1', limit: 'cl_r', amount: '30.00' },
    ]).catch((e: unknown) => e)) as ImportError;

    expect(error.errors).toEqual([{ line: 1, reason: 'repayment of 10.00 exceeds the outstanding amount of cl_r at this point (outstanding 0.00)' }]);
    expect(await dumpAllTables(store())).toBe(before);
  });

  it('judges each line of an overdrawn limit against the accepted lines before it, in file order across batches', async () => {
    const tenant = await createTenant(store());
    await importLines(store(), tenant.org.uid, [{ ...LIMIT, uid: 'cl_o', capacity: '100.00' }, { ...LIMIT, uid: 'cl_fine', capacity: '100.00' }]);
    const before = await dumpAllTables(store());

    const error = (await importLines(
      store(),
      tenant.org.uid,
      [
        { object: 'drawdown', id: 'd1', limit: 'cl_o', amount: '60.00' },
        { object: 'drawdown', id: 'f1', limit: 'cl_fine', amount: '100.00' },
        { object: 'drawdown', id: 'd2', limit: 'cl_o', amount: '50.00' }, // 110: refused, not counted further
        { object: 'drawdown', id: 'd3', limit: 'cl_o', amount: '40.00' }, // 100: fine without d2
        { object: 'repayment', id: 'r1', limit: 'cl_o', amount: '100.00' },
        { object: 'repayment', id: 'r2', limit: 'cl_o', amount: '0.01' }, // below zero
        { object: 'drawdown', id: 'd4', limit: 'cl_o', amount: '100.00' },
      ],
      { batchLines: 2 },
    ).catch((e: unknown) => e)) as ImportError;

    expect(error.errors).toEqual([
      { line: 3, reason: 'drawdown of 50.00 exceeds the balance of cl_o at this point (balance 40.00, capacity 100.00)' },
      { line: 6, reason: 'repayment of 0.01 exceeds the outstanding amount of cl_o at this point (outstanding 0.00)' },
    ]);
    expect(await dumpAllTables(store())).toBe(before);
  });

  it('replays lines already recorded as no-ops and applies only the new ones', async () => {
    const tenant = await createTenant(store());
    const first = [{ ...LIMIT, uid: 'cl_i', capacity: '100.00' }, { object: 'drawdown', id: 'd1', limit: 'cl_i', amount: '70.00' }];
    await importLines(store(), tenant.org.uid, first);
    // d1 again would overdraw next to d2 if it were applied a second time.
    const summary = await importLines(store(), tenant.org.uid, [...first, { object: 'drawdown', id: 'd2', limit: 'cl_i', amount: '30.00' }]);
    expect(summary.ledger_entries).toEqual({ applied: 1, unchanged: 1 });
    expect(await limitState(store(), tenant.org.id, 'cl_i')).toMatchObject({ outstanding: '100.00', ledger: '100.00', entries: '2' });
  });

  // Concurrent writers need several connections: PostgreSQL only.
  if (kind === 'postgres') {
    it('counts once an id that a concurrent single write records while the import waits for its limit (regression: it was applied twice: a false overdraw, or a duplicate key)', async () => {
      const tenant = await createTenant(store());
      await importLines(store(), tenant.org.uid, [{ ...LIMIT, uid: 'cl_s', capacity: '100.00' }]);
      const [{ schema } = { schema: '' }] = await store().query<{ schema: string }>('SELECT current_schema() AS schema');
      const writer = new PostgresStore(process.env.DATABASE_URL ?? '', { poolSize: 1, searchPath: schema });
      try {
        // What applyLedgerEntry does, held open: the limit row first, then the entry.
        let commit = () => {};
        const held = new Promise<void>((resolve) => (commit = resolve));
        let written = () => {};
        const recorded = new Promise<void>((resolve) => (written = resolve));
        const single = writer.transaction(async (tx) => {
          const [limit] = await tx.query<{ id: string }>(
            `UPDATE credit_limits SET outstanding = outstanding + 5 WHERE org_id = $1 AND uid = 'cl_s' RETURNING id::text AS id`,
            [tenant.org.id],
          );
          await tx.query(`INSERT INTO ledger_entries (org_id, id, limit_id, kind, amount, at) VALUES ($1, 'shared', $2, 'drawdown', 5, now())`, [
            tenant.org.id,
            limit?.id,
          ]);
          written();
          await held;
        });
        await recorded;
        const importing = importLines(store(), tenant.org.uid, [
          { object: 'drawdown', id: 'shared', limit: 'cl_s', amount: '5.00' },
          { object: 'drawdown', id: 'mine', limit: 'cl_s', amount: '95.00' },
        ]);
        while ((await lockWaiters(store(), { statementLike: 'ORDER BY id FOR UPDATE' })) === 0) await new Promise((resolve) => setTimeout(resolve, 20));
        commit();
        await single;
        const summary = await importing;
        expect(summary.ledger_entries).toEqual({ applied: 1, unchanged: 1 });
        expect(await limitState(store(), tenant.org.id, 'cl_s')).toMatchObject({ outstanding: '100.00', ledger: '100.00', entries: '2' });
      } finally {
        await writer.close();
      }
    });

    it('loses no update when single entries are written to the same limits while the import runs, and counts a shared id once', async () => {
      const tenant = await createTenant(store());
      await importLines(store(), tenant.org.uid, [
        { ...LIMIT, uid: 'cl_x', capacity: '1000000.00' },
        { ...LIMIT, uid: 'cl_y', capacity: '1000000.00' },
      ]);
      const [{ schema } = { schema: '' }] = await store().query<{ schema: string }>('SELECT current_schema() AS schema');
      const writers = new PostgresStore(process.env.DATABASE_URL ?? '', { poolSize: 4, searchPath: schema });
      const single: Promise<LedgerResult | 'refused'>[] = [];
      const write = (i: number) =>
        single.push(
          applyLedgerEntry(anotherProcessLedger(writers), tenant.org.id, { kind: 'drawdown', id: i === 0 ? 'shared' : `s_${i}`, limit: i === 0 || i % 2 ? 'cl_x' : 'cl_y', amount: '1.00' }).catch(
            (error: unknown) => {
              if (error instanceof LedgerError) return 'refused' as const;
              throw error;
            },
          ),
        );
      const IMPORT_LINES = 600;
      async function* file(): AsyncGenerator<string> {
        for (let i = 0; i < IMPORT_LINES; i += 1) {
          const id = i === IMPORT_LINES - 1 ? 'shared' : `i_${i}`;
          yield `${JSON.stringify({ object: 'drawdown', id, limit: i % 2 ? 'cl_x' : 'cl_y', amount: '1.00' })}\n`;
          // Single entries interleave with the reading, and race with the final apply.
          if (i % 60 === 0) write(i / 60 + 1);
        }
        write(0);
        for (let i = 0; i < 10; i += 1) write(100 + i);
      }
      try {
        const summary = await importJsonl(store(), tenant.org.uid, file(), { batchLines: 50 });
        const results = await Promise.all(single);
        expect(results).not.toContain('refused');
        const sharedApplied = (results as LedgerResult[]).filter((r) => r.id === 'shared' && r.applied).length + (summary.ledger_entries.applied === IMPORT_LINES ? 1 : 0);
        expect(sharedApplied).toBe(1);

        const x = await limitState(store(), tenant.org.id, 'cl_x');
        const y = await limitState(store(), tenant.org.id, 'cl_y');
        const entries = Number(x?.entries) + Number(y?.entries);
        expect(entries).toBe(IMPORT_LINES + results.length - 1); // "shared" once
        expect(Number(x?.outstanding) + Number(y?.outstanding)).toBe(entries);
        expect([x?.outstanding, y?.outstanding]).toEqual([x?.ledger, y?.ledger]);
        for (const result of results as LedgerResult[]) {
          const now = result.limit === 'cl_x' ? x : y;
          expect((now?.updated_at ?? '') >= result.updated_at).toBe(true); // updated_at only moves forward
        }
      } finally {
        await Promise.allSettled(single);
        await writers.close();
      }
    });
  }
});
