import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runPgQuery, runPooled } from '../../src/store/pg-query.js';

// The store's way of handing pg a query (src/store/pg-query.ts): a Query made
// from the text, and a prepared statement's row layout built once. pg itself is
// the reference: every row must come back as its own config path returns it.
const postgresUrl = process.env.DATABASE_URL;
describe.runIf(postgresUrl && /^postgres(ql)?:/.test(postgresUrl))('queries handed to pg by the store (on postgres)', () => {
  let pool: pg.Pool;
  beforeAll(() => {
    pool = new pg.Pool({ connectionString: postgresUrl, max: 2 });
  });
  afterAll(async () => {
    await pool.end();
  });

  const ROWS = `SELECT n, n::text AS label, CASE WHEN n % 2 = 0 THEN NULL ELSE n * 1.5 END::numeric AS amount,
                       timestamptz '2025-01-01 00:00:00.123456Z' + n * interval '1 microsecond' AS at,
                       n = 2 AS "__proto__", 'x' AS "constructor"
                  FROM generate_series(1, $1::int) n`;

  it('returns a prepared statement’s rows as pg’s own config path does, on its first run and when its layout is reused', async () => {
    const client = await pool.connect();
    try {
      const expected = await client.query({ text: ROWS, values: [3] });
      const name = `pg_query_rows_${process.pid}`;
      for (let run = 0; run < 3; run += 1) {
        const result = await runPgQuery(client, { text: ROWS, values: [3], name });
        expect(result.rows).toEqual(expected.rows);
        expect(result.fields.map((field) => field.name)).toEqual(expected.fields.map((field) => field.name));
        expect(result.rowCount).toBe(3);
        expect(Object.getPrototypeOf(result.rows[0])).toBe(Object.prototype);
      }
    } finally {
      client.release();
    }
  });

  it('parses by the new column types when a statement of the same name answers with other columns on the same connection', async () => {
    const name = `pg_query_layout_${process.pid}`;
    const client = await pool.connect();
    // What a pooler that moved the connection to another server session does: pg
    // believes the statement prepared, but the server parses the text it is sent again.
    const forget = () => delete (client as unknown as { connection: { parsedStatements: Record<string, string> } }).connection.parsedStatements[name];
    try {
      expect((await runPgQuery(client, { text: 'SELECT 7::int AS value', values: [], name })).rows).toEqual([{ value: 7 }]);
      await client.query(`DEALLOCATE ${name}`);
      forget();
      expect((await runPgQuery(client, { text: "SELECT '7'::text AS value", values: [], name })).rows).toEqual([{ value: '7' }]);
      await client.query(`DEALLOCATE ${name}`);
      forget();
      expect((await runPgQuery(client, { text: "SELECT '7'::text AS value, 8::int AS other", values: [], name })).rows).toEqual([{ value: '7', other: 8 }]);
      expect((await runPgQuery(client, { text: "SELECT '7'::text AS value, 8::int AS other", values: [], name })).rows).toEqual([{ value: '7', other: 8 }]);
    } finally {
      client.release();
    }
  });

  it('keeps pg’s read timeout, and a failed query leaves the pooled connection usable', async () => {
    await expect(runPooled(pool, { text: 'SELECT pg_sleep(5)', values: [], query_timeout: 100 })).rejects.toThrow('Query read timeout');
    await expect(runPooled(pool, { text: 'SELECT 1/0 AS broken', values: [], name: `pg_query_error_${process.pid}` })).rejects.toThrow('division by zero');
    expect((await runPooled(pool, { text: 'SELECT $1::int + 1 AS next', values: [41] })).rows).toEqual([{ next: 42 }]);
  });
});
