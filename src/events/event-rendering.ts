import { API_VERSION } from '../domain/api-version.js';
import type { ApiRecord, JsonValue } from '../listing/api-record.js';
import type { FieldDefinition, ResourceDefinition } from '../listing/resource-definition.js';
import { EVENT_OBJECTS, objectTypeOf } from './event-types.js';
import { apiTimestampOfJsonb } from './jsonb-timestamp.js';

/** A record's columns as the event triggers keep them (migration 017): column name → value, as to_jsonb renders it. */
export type StoredColumns = Readonly<Record<string, JsonValue>>;

/**
 * An event as the API answers it (docs/webhooks.md), from its row in
 * `events` selected by the events definition (src/events/events-resource.ts):
 * `data.object` is the record rendered exactly as GET renders it, and
 * `data.previous_attributes` (on `*.updated` and `loan.repaid`) only the
 * fields that changed, with their earlier values.
 */
export function renderEventRow(row: Readonly<Record<string, string | null>>): ApiRecord {
  const type = row.type ?? '';
  const resource = EVENT_OBJECTS[objectTypeOf(type)];
  const object = renderStoredRecord(resource, parseColumns(row.data_object));
  const data: Record<string, JsonValue> = { object };
  if (row.previous_attributes !== null && row.previous_attributes !== undefined) {
    data.previous_attributes = renderStoredRecord(resource, parseColumns(row.previous_attributes), { onlyGiven: true });
  }
  return {
    id: row.uid ?? '',
    object: 'event',
    type,
    created_at: row.created_at ?? '',
    api_version: API_VERSION,
    data,
    request_id: row.request_id ?? null,
    idempotency_key: row.idempotency_key ?? null,
    import_id: row.import_id ?? null,
  };
}

/**
 * A record from its stored columns, field by field in definition order, as
 * serializeRecord renders the row GET selects: timestamps in UTC with six
 * fractional digits, decimals as JSON numbers. `onlyGiven`: only the fields
 * whose columns are there (previous_attributes). A record of a type no
 * definition knows is passed on as stored.
 */
export function renderStoredRecord(resource: ResourceDefinition | undefined, columns: StoredColumns, options: { onlyGiven?: boolean } = {}): ApiRecord {
  if (!resource) return { ...columns };
  const record: ApiRecord = {};
  for (const [name, field] of Object.entries(resource.fields)) {
    const value = columns[field.column];
    if (value === undefined && options.onlyGiven) continue;
    record[name] = renderValue(field, value ?? null);
  }
  return record;
}

function renderValue(field: FieldDefinition, value: JsonValue): JsonValue {
  if (value === null) return field.nullable ? null : '';
  switch (field.type) {
    case 'timestamp':
      return apiTimestampOfJsonb(String(value));
    case 'decimal':
      // to_jsonb writes a NUMERIC as a JSON number of its exact text; GET writes Number(text): the same double.
      return typeof value === 'number' ? value : Number(value);
    case 'string':
      return typeof value === 'string' ? value : String(value);
    case 'json':
      return value;
  }
}

function parseColumns(text: string | null | undefined): StoredColumns {
  const parsed = JSON.parse(text ?? '{}') as JsonValue;
  return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? parsed : {};
}
