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
 * of this organization. One index probe of the referenced table per line.
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
      await tx.query(
        `INSERT INTO ${UNRESOLVED_REFERENCES_TABLE} (line, object, field, uid)
         SELECT s.line, s.object, '${column}', s.${column} FROM ${STAGING_TABLE} s
          WHERE s.object = '${kind.object}'
            AND NOT EXISTS (SELECT 1 FROM ${resource.table} r WHERE r.org_id = $1 AND r.uid = s.${column} OFFSET 0)`,
        [orgId],
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
      await collectLineErrors<{ line: string; uid: string }>(
        tx,
        errors,
        maxErrors,
        `SELECT u.line, u.uid FROM ${UNRESOLVED_REFERENCES_TABLE} u
          WHERE u.object = $2 AND u.field = $3
            AND NOT EXISTS (SELECT 1 FROM ${resource.table} r WHERE r.org_id = $1 AND r.uid = u.uid OFFSET 0)`,
        [orgId, kind.object, column],
        (row) => `${column}: no ${resource.name} '${row.uid}' in this organization or this file`,
      );
    }
  }
}
