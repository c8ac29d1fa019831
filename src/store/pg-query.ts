import pg from 'pg';
import PgResult from 'pg/lib/result.js';

/** pg reads a per-query `query_timeout` (its client-side read timeout) that its types leave out. */
export type TimedQueryConfig = pg.QueryConfig & { query_timeout?: number };

type QueryCallback = (error: Error | undefined, result: pg.QueryResult) => void;

type FieldDescription = PgResult['fields'][number];

interface Layout {
  readonly fields: FieldDescription[];
  readonly parsers: unknown[] | undefined;
  readonly empty: unknown;
}

/**
 * Prepared statements' row layouts, by statement name, per connection: pg
 * gives each client type parsers of its own, which a layout holds.
 */
const layoutsByTypes = new WeakMap<object, Map<string, Layout>>();
const MAX_LAYOUTS = 1000;

/**
 * pg builds a row's parsers and a template row from the statement's row
 * description every time a query runs (a null-prototype object spread into
 * another: 3–6 µs for a page's dozen columns). A prepared statement's rows
 * always look the same, so its layout is built once and reused whenever the
 * description matches it column for column.
 */
class PreparedResult extends PgResult {
  constructor(private readonly statement: string) {
    super(undefined, undefined);
  }

  override addFields(fields: FieldDescription[]): void {
    const types = this._types;
    let layouts = typeof types === 'object' && types !== null ? layoutsByTypes.get(types) : undefined;
    const known = layouts?.get(this.statement);
    if (known && sameFields(known.fields, fields)) {
      this.fields = fields;
      this._parsers = known.parsers;
      this._prebuiltEmptyResultObject = known.empty;
      return;
    }
    super.addFields(fields);
    if (typeof types !== 'object' || types === null) return;
    if (!layouts || layouts.size >= MAX_LAYOUTS) layoutsByTypes.set(types, (layouts = new Map()));
    layouts.set(this.statement, { fields, parsers: this._parsers, empty: this._prebuiltEmptyResultObject });
  }
}

function sameFields(known: readonly FieldDescription[], fields: readonly FieldDescription[]): boolean {
  if (known.length !== fields.length) return false;
  for (let i = 0; i < fields.length; i += 1) {
    const a = known[i];
    const b = fields[i];
    if (a?.name !== b?.name || a?.dataTypeID !== b?.dataTypeID || a?.format !== b?.format) return false;
  }
  return true;
}

/**
 * A pg `Query` for `config`, to hand to `client.query` as is. Given a config
 * object, pg copies it through its property descriptors for every query
 * (about 4 µs, more than the rest of the driver's work for a one-row
 * answer); given the text, it takes it as is. The fields set afterwards are
 * the ones pg reads from the query itself when it is submitted.
 */
export function pgQuery(config: TimedQueryConfig, callback?: QueryCallback): pg.Query {
  const query = callback ? new pg.Query(config.text, config.values ?? [], callback) : new pg.Query(config.text, config.values ?? []);
  const fields = query as unknown as { name?: string; query_timeout?: number; _result: PgResult; _results: PgResult };
  if (config.name !== undefined) {
    fields.name = config.name;
    fields._result = fields._results = new PreparedResult(config.name);
  }
  if (config.query_timeout !== undefined) fields.query_timeout = config.query_timeout;
  return query;
}

/** Runs `config` on a checked-out client, as `client.query(config)` does, without pg's copy of the config. */
export function runPgQuery(client: pg.ClientBase, config: TimedQueryConfig): Promise<pg.QueryResult> {
  return new Promise((resolve, reject) => {
    client.query(pgQuery(config, (error, result) => (error ? reject(error) : resolve(result))));
  });
}

/**
 * Runs `config` on a pooled connection, as `pool.query(config)` does. pg-pool
 * hands the query to the client with a callback of its own, which a `Query`
 * made without one takes (its types know only the config object).
 */
export function runPooled(pool: pg.Pool, config: TimedQueryConfig): Promise<pg.QueryResult> {
  return pool.query(pgQuery(config) as unknown as pg.QueryConfig);
}
