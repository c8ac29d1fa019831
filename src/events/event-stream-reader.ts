import { ApiError, type ParamError } from '../domain/errors.js';
import { truncate } from '../domain/truncate.js';
import { parseListQuery, type AppliedFilter } from '../listing/query-parser.js';
import { selectExpression, selectList, serializeRecord, type ApiRecord } from '../listing/record-rendering.js';
import { whereOf } from '../listing/sql.js';
import type { Queryable } from '../store/store.js';
import { events } from './events-resource.js';

/**
 * Where a stream stands in the organization's log: after the event at
 * (created_at, id), the same keyset position the cursor walk uses
 * (src/listing/cursor-sql.ts). Publication stamps every event after every
 * event already visible (publish-events.ts), so whatever becomes visible
 * later sorts after a position taken now: a stream that reads on from its
 * position never misses an event, even one whose transaction committed late.
 */
export interface StreamPosition {
  /** created_at as exact text (microseconds, UTC), or `-infinity` before the first event. */
  readonly sortKey: string;
  /** The event's internal id; `0` with a `created_from` start (its events have larger ids). */
  readonly rowId: string;
  /** The public id of the event at the position, when there is one: a reconnect's Last-Event-ID. */
  readonly eventId?: string | undefined;
}

/** A stream's filters (`type`, `object`) and where it starts (`created_from`), from the query string. */
export interface StreamQuery {
  readonly filters: readonly AppliedFilter[];
  readonly createdFrom: string | undefined;
}

export interface StreamedEvent {
  readonly id: string;
  readonly type: string;
  /** The event exactly as GET /api/events/{id}/ renders it. */
  readonly event: ApiRecord;
  readonly position: StreamPosition;
}

/** The query parameters the stream takes (the log's, but no paging, ordering or upper bound). */
export const STREAM_PARAMETERS = ['type', 'object', 'created_from'] as const;
const BEFORE_THE_FIRST: StreamPosition = { sortKey: '-infinity', rowId: '0' };
const SORT_KEY = '_stream_key';
const ROW_ID = '_stream_row_id';

/** Parses the stream's query: only STREAM_PARAMETERS, each as the log reads it; anything else is a 422 naming it. */
export function parseStreamQuery(rawQuery: string): StreamQuery {
  const errors: ParamError[] = [];
  for (const [param] of new URLSearchParams(rawQuery)) {
    if (!(STREAM_PARAMETERS as readonly string[]).includes(param) && !errors.some((error) => error.param === param)) {
      errors.push({ param, detail: `${truncate(param) || 'a parameter without a name'} is not a parameter of /api/events/stream/; accepted parameters are ${STREAM_PARAMETERS.join(', ')}` });
    }
  }
  if (errors.length > 0) throw ApiError.invalidParameters(errors);
  const query = parseListQuery(events, rawQuery);
  const from = query.filters.find((applied) => applied.filter.param === 'created_from');
  return { filters: query.filters.filter((applied) => applied !== from), createdFrom: from?.value };
}

/**
 * Where a stream starts: after the event `lastEventId` names (a reconnect),
 * else at `created_from` (inclusive), else after the newest event in the log
 * now (new events only). An id that is not one of the organization's events
 * is a 422 naming `Last-Event-ID`.
 */
export async function streamStart(db: Queryable, orgId: string, query: StreamQuery, lastEventId: string | undefined): Promise<StreamPosition> {
  const keyed = `SELECT ${selectExpression('created_at', events.fields.created_at!)} AS key, id::text AS id, uid FROM events WHERE org_id = $1`;
  if (lastEventId !== undefined) {
    const [row] = await db.query<{ key: string; id: string; uid: string }>(`${keyed} AND uid = $2`, [orgId, lastEventId]);
    if (!row) {
      throw ApiError.invalidParameters([
        { param: 'Last-Event-ID', detail: `Last-Event-ID '${truncate(lastEventId)}' is not an event of this organization's log (pruned after its retention, or never one): reconnect with created_from instead` },
      ]);
    }
    return { sortKey: row.key, rowId: row.id, eventId: row.uid };
  }
  if (query.createdFrom !== undefined) return { sortKey: query.createdFrom, rowId: '0' };
  const [newest] = await db.query<{ key: string; id: string; uid: string }>(`${keyed} ORDER BY created_at DESC, id DESC LIMIT 1`, [orgId]);
  return newest ? { sortKey: newest.key, rowId: newest.id, eventId: newest.uid } : BEFORE_THE_FIRST;
}

/**
 * Up to `limit` events after `position`, oldest first, rendered as GET
 * renders them: one router statement by organization (Citus), an index scan
 * of (org_id, created_at, id) from the position.
 */
export async function eventsAfter(db: Queryable, orgId: string, query: StreamQuery, position: StreamPosition, limit: number): Promise<StreamedEvent[]> {
  const rows = await db.query<Record<string, string | null>>(statementFor(query), [orgId, ...query.filters.map((applied) => applied.value), position.sortKey, position.rowId, limit], {
    prepare: true,
  });
  return rows.map((row) => {
    const event = serializeRecord(events, row);
    return { id: String(event.id), type: String(event.type), event, position: { sortKey: row[SORT_KEY] ?? '', rowId: row[ROW_ID] ?? '' } };
  });
}

const statements = new Map<string, string>();

/** The statement of one set of filters (few: type, object, both or neither). */
function statementFor(query: StreamQuery): string {
  const shape = query.filters.map((applied) => applied.filter.param).join(',');
  let text = statements.get(shape);
  if (text === undefined) {
    const at = query.filters.length + 2;
    text =
      `SELECT ${selectList(events, 'events')}, ${selectExpression('events.created_at', events.fields.created_at!)} AS ${SORT_KEY}, events.id::text AS ${ROW_ID} ` +
      `FROM events WHERE ${whereOf(events, { ...query, ordering: { field: 'created_at', descending: false }, page: 1, params: [] })} ` +
      // Qualified: a bare created_at in ORDER BY is the select list's (the timestamp as text), which no index holds.
      // The bound on created_at alone: the day partitions before the position are pruned (migration 025).
      `AND (events.created_at, events.id) > ($${at}::timestamptz, $${at + 1}::bigint) AND events.created_at >= $${at}::timestamptz ` +
      `ORDER BY events.created_at, events.id LIMIT $${at + 2}`;
    statements.set(shape, text);
  }
  return text;
}
