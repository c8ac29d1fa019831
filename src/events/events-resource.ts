import { Type } from '@sinclair/typebox';
import type { FieldDefinition, ResourceDefinition, ValueParser } from '../listing/resource-definition.js';
import { identifierValue } from '../listing/value-parsers.js';
import { createdAtField, timeRangeFilters, UID_BOUNDS } from '../resources/common-fields.js';
import { renderEventRow } from './event-rendering.js';
import { EVENT_TYPES, eventTypesMatching } from './event-types.js';

const MAX_TYPE_PATTERN_LENGTH = Math.max(...EVENT_TYPES.map((type) => type.length));

/**
 * The `type` filter: an event type, or `object.*` for every type of one
 * object (`credit_limit.*`), any letter case; the SQL parameter is the array
 * of types it names (the filter's operator is `= any`).
 */
export const eventTypeValue: ValueParser = {
  schema: Type.String({
    minLength: 1,
    maxLength: MAX_TYPE_PATTERN_LENGTH,
    description: `An event type (${EVENT_TYPES.join(', ')}) or a prefix such as \`credit_limit.*\` for every type of one object`,
    examples: ['credit_limit.*', 'loan.repaid'],
  }),
  parse(raw) {
    const types = eventTypesMatching(raw.replace(/[A-Z]/g, (letter) => letter.toLowerCase()));
    if (!types) return { ok: false, reason: `must be an event type (${EVENT_TYPES.join(', ')}) or an object's prefix such as credit_limit.*` };
    return { ok: true, value: `{${types.join(',')}}` };
  },
};

const nullableText = (column: string, description: string, example: string): FieldDefinition => ({ column, type: 'string', description, example, nullable: true });

/**
 * The events log, `/api/events/` and `/api/events/{id}/` (SPEC §3c): listed
 * and paged by the list engine like every collection. Its fields are the
 * columns an event is rendered from (renderEventRow): `uid` is the event's
 * `id`, `data_object` and `previous_attributes` the stored record.
 * created_at is when the event entered the log, strictly increasing per
 * organization (src/events/publish-events.ts), so a cursor walk by it
 * oldest first misses no event.
 */
export const events: ResourceDefinition = {
  path: 'events',
  name: 'event',
  schemaName: 'Event',
  description:
    'A change to one of your records, in the order it entered the log: `data.object` is the record exactly as GET renders it right after the change; `data.previous_attributes`, on `*.updated` and `loan.repaid`, the fields that changed with their earlier values.',
  table: 'events',
  partitionKey: 'created_at',
  fields: {
    uid: { column: 'uid', type: 'string', description: "The event's id (`evt_…`).", example: 'evt_0123456789abcdef0123456789abcdef', ...UID_BOUNDS },
    type: { column: 'type', type: 'string', description: 'What happened.', example: 'credit_limit.updated', enum: EVENT_TYPES },
    object_uid: { column: 'object_uid', type: 'string', description: 'UID (or a ledger entry\'s id) of the record the event is about.', example: 'cl_demo_01_usd', ...UID_BOUNDS },
    data_object: { column: 'data_object', type: 'json', description: "The record's public columns right after the change.", example: '{}' },
    previous_attributes: { column: 'previous_attributes', type: 'json', description: 'The columns that changed, with their earlier values.', example: '{}', nullable: true },
    request_id: nullableText('request_id', 'X-Request-Id of the request that caused it.', 'req_1'),
    idempotency_key: nullableText('idempotency_key', 'Idempotency-Key of the request that caused it.', 'key-1'),
    import_id: nullableText('import_id', 'The import that caused it.', 'imp_1'),
    created_at: { ...createdAtField, description: 'When the event entered the log: RFC 3339, UTC, six fractional digits; strictly increasing in your organization.' },
  },
  filters: [
    ...timeRangeFilters.filter((filter) => filter.field === 'created_at'),
    { param: 'type', field: 'type', operator: '= any', value: eventTypeValue, description: 'Event type, or a prefix such as `credit_limit.*`.' },
    { param: 'object', field: 'object_uid', operator: '=', value: identifierValue, description: 'UID of the record the events are about (a ledger entry: its id).' },
  ],
  orderings: ['created_at'],
  defaultOrdering: '-created_at',
  renderRow: renderEventRow,
};
