import pg from 'pg';
import type { Statement } from './store.js';

/* Statements spelled out as text, to go in one simple-protocol message with others (a BEGIN, a COMMIT). */

/** The statements pg has prepared on this client's connection, by name (pg's own record of them: it skips their Parse too). */
export function preparedOn(client: pg.PoolClient): Readonly<Record<string, string | undefined>> {
  return (client as unknown as { connection: { parsedStatements: Record<string, string | undefined> } }).connection.parsedStatements;
}

/** `$n` replaced by the n-th parameter as a literal (pg's own quoting, correct whatever standard_conforming_strings says). */
export function withLiterals(sql: string, params: readonly unknown[]): string {
  return sql.replace(/\$(\d+)/g, (_, n: string) => {
    const value = params[Number(n) - 1];
    if (value === undefined) throw new RangeError(`no parameter $${n}`);
    return literal(value, n);
  });
}

export function literal(value: unknown, n: string): string {
  if (value === null) return 'NULL';
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new RangeError(`parameter $${n} is not a finite number`);
    return String(value);
  }
  if (typeof value === 'string') return pg.escapeLiteral(value);
  // An array of text or numbers: PostgreSQL's array literal, quoted as one text literal (cast by the statement).
  if (Array.isArray(value)) return pg.escapeLiteral(`{${value.map((element: unknown) => arrayElement(element, n)).join(',')}}`);
  throw new RangeError(`parameter $${n} cannot be sent as a literal`);
}

function arrayElement(value: unknown, n: string): string {
  if (value === null) return 'NULL';
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  if (typeof value === 'string') return `"${value.replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`;
  throw new RangeError(`parameter $${n} holds an element that cannot be sent as a literal`);
}

/** `EXECUTE name(literals)` of a statement this connection has prepared under `name`; undefined if it has not. */
export function executeText(client: pg.PoolClient, name: string | undefined, statement: Statement): string | undefined {
  if (name === undefined || preparedOn(client)[name] !== statement.sql) return undefined;
  const { params } = statement;
  return params.length === 0 ? `EXECUTE ${name}` : `EXECUTE ${name}(${params.map((value, i) => literal(value, String(i + 1))).join(', ')})`;
}

/**
 * The text that sends a transaction's first statement with its BEGIN (one
 * simple-protocol message), or undefined to send it on its own. A
 * prepared statement is folded only once this connection has prepared it,
 * as `EXECUTE name(literals)`: it then runs with the plan it would have
 * had on its own. Spelled out with literals, PostgreSQL would plan it
 * afresh for those values each time — for a key lookup of an organization
 * newer than the table's statistics, a scan of the organization's rows.
 */
export function foldedWithBegin(client: pg.PoolClient, name: string | undefined, statement: Statement, prepare: boolean): string | undefined {
  return prepare ? executeText(client, name, statement) : withLiterals(statement.sql, statement.params);
}
