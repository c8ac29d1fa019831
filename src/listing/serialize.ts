import type { ResourceDefinition } from './resource-definition.js';

export type ApiRecord = Record<string, string | number | null>;

type RowSerializer = (row: Record<string, string | null>) => ApiRecord;

const serializers = new WeakMap<ResourceDefinition, RowSerializer>();

/** Turns a row selected by `buildListSql` into the public JSON record. */
export function serializeRecord(resource: ResourceDefinition, row: Record<string, string | null>): ApiRecord {
  let serialize = serializers.get(resource);
  if (!serialize) {
    serialize = compileRowSerializer(resource);
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
    const present = field.type === 'decimal' ? `Number(row[${key}] ?? '')` : `row[${key}] ?? ''`;
    const value = field.nullable ? `row[${key}] === null ? null : ${present}` : present;
    return `${key}: ${value}`;
  });
  return new Function('row', `return { ${properties.join(', ')} };`) as RowSerializer;
}
