import type { ApiRecord } from './api-record.js';
import type { FieldDefinition, ResourceDefinition } from './resource-definition.js';

/*
 * How a record is rendered, on every path that answers one (lists, retrieves, a write's 201): its fields
 * selected as exact text (selectList), then turned into its JSON (serializeRecord).
 */

export type { ApiRecord, JsonValue } from './api-record.js';

type RowSerializer = (row: Record<string, string | null>) => ApiRecord;

const serializers = new WeakMap<ResourceDefinition, RowSerializer>();

/** Turns a row selected by `buildListSql` into the public JSON record. */
export function serializeRecord(resource: ResourceDefinition, row: Record<string, string | null>): ApiRecord {
  let serialize = serializers.get(resource);
  if (!serialize) {
    serialize = resource.renderRow ?? compileRowSerializer(resource);
    serializers.set(resource, serialize);
  }
  return serialize(row);
}

/**
 * One function per resource that builds the record as a single object
 * literal, fields in definition order. Walking `Object.entries(fields)` for
 * every row allocated an array of pairs per row and grew each record one
 * property at a time; the literal allocates the record once, with its final
 * shape. Field names come from resource definitions (trusted code, never
 * input) and are embedded as JSON string literals.
 */
function compileRowSerializer(resource: ResourceDefinition): RowSerializer {
  const properties = Object.entries(resource.fields).map(([name, field]) => {
    const key = JSON.stringify(name);
    // NUMERIC columns hold at most 15 significant digits, which an IEEE
    // double represents and prints back exactly.
    const present =
      field.type === 'decimal' ? `Number(row[${key}] ?? '')` : field.type === 'json' ? `JSON.parse(row[${key}] ?? 'null')` : `row[${key}] ?? ''`;
    const value = field.nullable ? `row[${key}] === null ? null : ${present}` : present;
    return `${key}: ${value}`;
  });
  return new Function('row', `return { ${properties.join(', ')} };`) as RowSerializer;
}

/** Every field of the resource, selected from `alias` as exact text under its public name, so both drivers return the same exact values. */
export function selectList(resource: ResourceDefinition, alias: string): string {
  return Object.entries(resource.fields)
    .map(([name, field]) => `${selectExpression(`${alias}.${field.column}`, field)} AS "${name}"`)
    .join(', ');
}

export function selectExpression(column: string, field: FieldDefinition): string {
  switch (field.type) {
    case 'timestamp':
      return `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;
    case 'decimal':
    case 'json':
      return `${column}::text`;
    case 'string':
      return column;
  }
}
