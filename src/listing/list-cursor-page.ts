import type { Queryable } from '../store/store.js';
import { decodeCursor, encodeCursor, type CursorBinding, type CursorPosition } from './cursor.js';
import { buildCursorPageSql, CURSOR_KEY_COLUMN } from './cursor-sql.js';
import type { CursorSecret } from './cursor-secret.js';
import { PAGE_SIZE, type ListQuery } from './query-parser.js';
import { collectionPathOf, type ResourceDefinition } from './resource-definition.js';
import { serializeRecord, type ApiRecord } from './record-rendering.js';
import { ROW_ID_COLUMN } from './sql.js';

export interface CursorPageResult {
  readonly count: number;
  readonly items: ApiRecord[];
  /** The cursor of the page after this one, null at the end. */
  readonly next: string | null;
  /** The cursor of the page before this one, null at the start. */
  readonly previous: string | null;
}

/**
 * One keyset page (`cursor=` in the query): the rows after (or before) the
 * cursor's position, the exact count of all matches, and the cursors that
 * continue after the last row and before the first. A cursor continues only
 * the list it was issued for (see decodeCursor).
 *
 * What a walk guarantees while the list changes: a row that matches and is
 * not changed during the walk is returned exactly once, whatever the
 * ordering, because the position is a row's (sort key, id), not a count of
 * rows. A row whose sort key changes moves: in an `updated_at` walk it moves
 * ahead of the cursor (updated_at only grows) and is returned again, in its
 * latest state.
 */
export async function listCursorPage(
  db: Queryable,
  resource: ResourceDefinition,
  orgId: string,
  query: ListQuery,
  secret: CursorSecret,
): Promise<CursorPageResult> {
  const binding = cursorBinding(resource, orgId, query);
  const key = await secret.get(db);
  const position = decodeCursor(query.cursor ?? '', binding, key);
  const sql = buildCursorPageSql(resource, orgId, query, position);
  const rows = await db.query<Record<string, string | boolean | null>>(sql.text, sql.values, { prepare: true });
  const count = Number(rows[0]?.count ?? 0);
  const behind = rows[0]?.behind === true;
  const scanned = rows.filter((row) => row[ROW_ID_COLUMN] !== null) as Record<string, string>[];
  const further = scanned.length > PAGE_SIZE;
  const pageRows = scanned.slice(0, PAGE_SIZE);
  if (position?.direction === 'before') pageRows.reverse();

  const first = pageRows[0];
  const last = pageRows[pageRows.length - 1];
  const at = (direction: 'after' | 'before', row: Record<string, string>): string =>
    encodeCursor({ direction, inclusive: false, sortKey: row[CURSOR_KEY_COLUMN] ?? '', rowId: row[ROW_ID_COLUMN] ?? '' }, binding, key);
  // An empty page knows only its position: the way back starts there, with the row at it.
  const backFromEmpty = (direction: 'after' | 'before', from: CursorPosition): string =>
    encodeCursor({ direction, inclusive: !from.inclusive, sortKey: from.sortKey, rowId: from.rowId }, binding, key);

  let next: string | null;
  let previous: string | null;
  if (position?.direction === 'before') {
    previous = further && first ? at('before', first) : null;
    next = !behind ? null : last ? at('after', last) : backFromEmpty('after', position);
  } else {
    // The last page links no `next`, in every ordering (SPEC §2): a client looping `while (next)` stops.
    next = further && last ? at('after', last) : null;
    previous = !behind || !position ? null : first ? at('before', first) : backFromEmpty('before', position);
  }
  return { count, items: pageRows.map((row) => serializeRecord(resource, row)), next, previous };
}

/**
 * The list a cursor belongs to: organization, collection (with a nested
 * collection's parent uid), normalized filters (sorted; a nested list's
 * include its parent's row id), ordering.
 */
export function cursorBinding(resource: ResourceDefinition, orgId: string, query: ListQuery): CursorBinding {
  return {
    orgId,
    collection: collectionPathOf(resource, query.parentUid),
    filters: query.filters.map((applied) => `${applied.filter.param}=${applied.value}`).sort(),
    ordering: `${query.ordering.descending ? '-' : ''}${query.ordering.field}`,
  };
}
