import type { ResourceDefinition } from './resource-definition.js';

export type ApiRecord = Record<string, string | number>;

/** Turns a row selected by `buildListSql` into the public JSON record. */
export function serializeRecord(resource: ResourceDefinition, row: Record<string, string | null>): ApiRecord {
  const record: ApiRecord = {};
  for (const [name, field] of Object.entries(resource.fields)) {
    const value = row[name] ?? '';
    // NUMERIC columns hold at most 15 significant digits, which an IEEE
    // double represents and prints back exactly.
    record[name] = field.type === 'decimal' ? Number(value) : value;
  }
  return record;
}
