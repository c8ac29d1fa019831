import { describe, expect, it } from 'vitest';
import { PostgresStore } from '../../src/store/postgres-store.js';
import { recordPgMessages } from '../helpers/pg-messages.js';

// A write transaction's first statement travels with its BEGIN (QueryOptions.sendWithBegin): one round trip
// less per write. A prepared statement is folded only once the connection has prepared it, as EXECUTE of
// it (its own plan); values of every kind must arrive exactly as they would as parameters.
const postgresUrl = process.env.DATABASE_URL;
describe.runIf(postgresUrl && /^postgres(ql)?:/.test(postgresUrl))('a transaction’s first statement sent with its BEGIN (on postgres)', () => {
  const STATEMENT = `SELECT $1::text AS quoted, $2::text AS missing, $3::int + 1 AS next, $4::numeric AS amount,
                            array_length($5::text[], 1) AS items, ($5::text[])[2] AS second, $6::bigint AS org`;
  const PARAMS = ["it's \\ a 'test'", null, 41, '1200.50', ['a', 'b "c"', 'd'], '101'];
  const EXPECTED = { quoted: "it's \\ a 'test'", missing: null, next: 42, amount: '1200.50', items: 3, second: 'b "c"', org: '101' };

  const messages = recordPgMessages();

  const firstStatement = (store: PostgresStore, options: { prepare?: boolean }) =>
    store.transaction(async (tx) => {
      const [row] = await tx.query(STATEMENT, PARAMS, { ...options, sendWithBegin: true });
      return row;
    });

  it('sends a prepared statement on its own the first time a connection runs it, then with the BEGIN as EXECUTE, same answer', async () => {
    const store = new PostgresStore(postgresUrl ?? '', { poolSize: 1 });
    try {
      expect(await firstStatement(store, { prepare: true })).toEqual(EXPECTED);
      expect(messages.sent()).toEqual(['BEGIN', STATEMENT, 'COMMIT']);
      messages.reset();
      expect(await firstStatement(store, { prepare: true })).toEqual(EXPECTED);
      expect(messages.sent()).toHaveLength(2);
      expect(messages.sent()[0]).toMatch(/^BEGIN; EXECUTE s_[0-9a-f]+\( ?E'it''s .*', NULL, 41, '1200\.50', .*, '101'\)$/);
      expect(messages.sent()[1]).toBe('COMMIT');
    } finally {
      await store.close();
    }
  });

  it('sends commitWith’s statements with the COMMIT in one message after earlier statements too, once prepared', async () => {
    const store = new PostgresStore(postgresUrl ?? '', { poolSize: 1 });
    const lockThenCommit = () =>
      store.transaction(async (tx) => {
        await tx.query('SELECT 1 AS locked');
        const [rows] = await tx.commitWith([{ sql: STATEMENT, params: PARAMS }]);
        return rows?.[0];
      });
    try {
      expect(await lockThenCommit()).toEqual(EXPECTED);
      expect(messages.sent()).toEqual(['BEGIN', 'SELECT 1 AS locked', STATEMENT, 'COMMIT']);
      messages.reset();
      expect(await lockThenCommit()).toEqual(EXPECTED);
      expect(messages.sent()).toHaveLength(3);
      expect(messages.sent()[2]).toMatch(/^EXECUTE s_[0-9a-f]+\( ?E'it''s .*', '101'\); COMMIT$/);
    } finally {
      await store.close();
    }
  });

  it('never folds a prepared statement where connections do not keep it (PgBouncer in transaction mode)', async () => {
    const store = new PostgresStore(postgresUrl ?? '', { poolSize: 1, namedStatements: false });
    try {
      for (let run = 0; run < 2; run += 1) {
        messages.reset();
        expect(await firstStatement(store, { prepare: true })).toEqual(EXPECTED);
        expect(messages.sent()).toEqual(['BEGIN', STATEMENT, 'COMMIT']);
      }
    } finally {
      await store.close();
    }
  });

  it('folds an unprepared statement at once, its values spelled out as literals', async () => {
    const store = new PostgresStore(postgresUrl ?? '', { poolSize: 1 });
    try {
      expect(await firstStatement(store, {})).toEqual(EXPECTED);
      expect(messages.sent()).toHaveLength(2);
      expect(messages.sent()[0]).toMatch(/^BEGIN; SELECT +E'it''s .*'::text AS quoted, NULL::text AS missing, 41::int \+ 1 AS next/);
    } finally {
      await store.close();
    }
  });
});
