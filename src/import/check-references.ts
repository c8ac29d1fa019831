import type { Queryable } from '../store/store.js';
import type { LineErrorList } from './import-error.js';
import { collectLineErrors } from './line-error-query.js';
import type { RecordKind } from './record-kinds.js';
import { STAGING_TABLE } from './staging.js';

/**
 * The record lines whose reference (a field declared `references` in its
 * collection's import line) named no record when their batch was merged:
 * the file may define it further on, so each is looked up once more at the end.
 */
const UNRESOLVED_REFERENCES_TABLE = 'import_unresolved_references';

export const CREATE_UNRESOLVED_REFERENCES_TABLE = `CREATE TEMP TABLE ${UNRESOLVED_REFERENCES_TABLE} (
  line bigint NOT NULL,
  object text NOT NULL,
  field text NOT NULL,
  uid text COLLATE "C" NOT NULL
) ON COMMIT DROP`;

/**
 * After a batch's records are merged (a record the batch itself defines is
 * then found): sets aside each of its lines whose references name no record
 * of this organization. Sharding-ready as in merge-records.ts: the uids the
 * staging table names (array text) are looked up in the organization's rows
 * alone, and the lines compared with what was found in the temporary tables.
 */
export async function stageUnresolvedReferences(
  tx: Queryable,
  orgId: string,
  kinds: readonly RecordKind[],
  lines: Readonly<Record<string, number>>,
): Promise<void> {
  for (const kind of kinds) {
    if ((lines[kind.object] ?? 0) === 0) continue;
    for (const { column, resource } of kind.references) {
      const [named] = await tx.query<{ uids: string | null }>(
        `SELECT array_agg(DISTINCT ${column})::text AS uids FROM ${STAGING_TABLE} WHERE object = $1`,
        [kind.object],
      );
      const found = await storedUids(tx, orgId, resource.table, named?.uids ?? '{}');
      await tx.query(
        `INSERT INTO ${UNRESOLVED_REFERENCES_TABLE} (line, object, field, uid)
         SELECT s.line, s.object, '${column}', s.${column} FROM ${STAGING_TABLE} s
          WHERE s.object = $1 AND NOT coalesce(s.${column} = ANY ($2::text[]), false)`,
        [kind.object, found],
      );
    }
  }
}

/** Once the whole file is merged: reports every line whose reference neither the store nor the file has. */
export async function checkReferences(
  tx: Queryable,
  orgId: string,
  kinds: readonly RecordKind[],
  errors: LineErrorList,
  maxErrors: number,
): Promise<void> {
  for (const kind of kinds) {
    for (const { column, resource } of kind.references) {
      const [named] = await tx.query<{ uids: string | null }>(
        `SELECT array_agg(DISTINCT uid)::text AS uids FROM ${UNRESOLVED_REFERENCES_TABLE} WHERE object = $1 AND field = $2`,
        [kind.object, column],
      );
      if (named?.uids == null) continue;
      const found = await storedUids(tx, orgId, resource.table, named.uids);
      await collectLineErrors<{ line: string; uid: string }>(
        tx,
        errors,
        maxErrors,
        `SELECT u.line, u.uid FROM ${UNRESOLVED_REFERENCES_TABLE} u
          WHERE u.object = $1 AND u.field = $2 AND u.uid <> ALL ($3::text[])`,
        [kind.object, column, found],
        (row) => `${column}: no ${resource.name} '${row.uid}' in this organization or this file`,
      );
    }
  }
}

/** Which of `uids` (array text) the organization has in `table`, as array text. */
async function storedUids(tx: Queryable, orgId: string, table: string, uids: string): Promise<string> {
  const [found] = await tx.query<{ uids: string | null }>(
    `SELECT array_agg(uid)::text AS uids FROM ${table} WHERE org_id = $1 AND uid = ANY ($2::text[])`,
    [orgId, uids],
  );
  return found?.uids ?? '{}';
}
