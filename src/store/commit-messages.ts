import type pg from 'pg';
import { setLocalForWorkers, type Statement } from './store.js';

/** How a transaction of the PostgreSQL store sends what commitWith gives it. */
export interface CommitChannel {
  /** Nothing waits for its COMMIT (queryAtCommit): the statements and COMMIT (and the BEGIN, if not sent yet) can go in one message. */
  readonly oneMessage: boolean;
  /** A statement's text ready to run in a message (`EXECUTE name(literals)` once prepared here), or undefined. */
  inline(statement: Statement): string | undefined;
  /** The BEGIN (and its SET LOCAL) not sent yet, taken by the message that sends it. */
  takeBegin(): string | undefined;
  /** Sends one message; `commits`: it ends with COMMIT, so a failure after sending it leaves the outcome unknown. */
  send(text: string, commits: boolean): Promise<pg.QueryResult[]>;
  /** Runs text on its own, after the BEGIN. */
  runAlone(text: string): Promise<void>;
  /** Runs one statement as the transaction's next (prepared when it has parameters, with the BEGIN if that is pending). */
  run(statement: Statement): Promise<unknown[]>;
  /** Whether the database is Citus's. */
  onCitus(): Promise<boolean>;
}

/**
 * commitWith on PostgreSQL: the statements and COMMIT, each statement's rows
 * returned. When this connection has prepared every statement: the
 * statements and COMMIT in one message (with the BEGIN if nothing was sent
 * yet: the whole transaction in one round trip). Otherwise one after the
 * other (which prepares them). On Citus, a `forWorkers` SET LOCAL goes in a
 * message of its own: Citus passes a SET LOCAL on to the workers as the
 * whole text of its message, which would run the other statements there too.
 */
export async function commitStatements(channel: CommitChannel, statements: readonly Statement[]): Promise<unknown[][]> {
  const citus = statements.some((statement) => statement.forWorkers) && (await channel.onCitus());
  const texts = channel.oneMessage ? statements.map((statement) => channel.inline(statement)) : undefined;
  if (texts?.every((text) => text !== undefined)) return inMessages(channel, statements, texts as string[], citus);
  const rows: unknown[][] = [];
  for (const statement of statements) {
    if (citus && statement.forWorkers) {
      await channel.runAlone(setLocalForWorkers(statement));
      rows.push([]);
    } else {
      rows.push(await channel.run(statement));
    }
  }
  return rows;
}

async function inMessages(channel: CommitChannel, statements: readonly Statement[], texts: readonly string[], citus: boolean): Promise<unknown[][]> {
  const rows: unknown[][] = [];
  let batch: string[] = [];
  const flush = async (commits: boolean) => {
    const begin = channel.takeBegin();
    const message = [...(begin === undefined ? [] : [begin]), ...batch, ...(commits ? ['COMMIT'] : [])];
    if (message.length === 0) return;
    const results = await channel.send(message.join('; '), commits);
    // The results of BEGIN (and SET LOCAL), the statements', then COMMIT's.
    const first = results.length - batch.length - (commits ? 1 : 0);
    for (let i = 0; i < batch.length; i += 1) rows.push(results[first + i]?.rows ?? []);
    batch = [];
  };
  for (const [i, statement] of statements.entries()) {
    if (citus && statement.forWorkers) {
      await flush(false);
      await channel.send(setLocalForWorkers(statement), false);
      rows.push([]);
    } else {
      batch.push(texts[i]!);
    }
  }
  await flush(true);
  return rows;
}

/** Whether a database is Citus's, asked once (again after a failure to ask). */
export class CitusProbe {
  private answer: Promise<boolean> | undefined;

  isCitus(query: (sql: string) => Promise<unknown>): Promise<boolean> {
    this.answer ??= query(`SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') AS citus`).then(
      (result) => (result as pg.QueryResult<{ citus: boolean }>).rows[0]?.citus === true,
      (error: unknown) => {
        this.answer = undefined;
        throw error;
      },
    );
    return this.answer;
  }
}
