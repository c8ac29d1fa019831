import type { ImportField, ResourceDefinition } from '../listing/resource-definition.js';
import { RESOURCES } from '../resources/index.js';

/** One importable collection, as the import needs it: derived from its resource definition. */
export interface RecordKind {
  /** The lines' `object`, e.g. `payment_method`. */
  readonly object: string;
  readonly table: string;
  readonly uidPrefix: string;
  /** The columns a line writes besides uid and the timestamps, with how each is read. */
  readonly fields: readonly (readonly [column: string, field: ImportField])[];
  readonly columns: readonly string[];
  /** Every field name a line may give. */
  readonly known: ReadonlySet<string>;
  readonly refused: Readonly<Record<string, string>>;
  /** For each record column of the staging table, the index of this kind's value in it, or -1. */
  readonly stagingSlots: readonly number[];
}

export interface StagingColumn {
  readonly name: string;
  readonly sqlType: string;
}

export interface RecordKinds {
  readonly kinds: readonly RecordKind[];
  /** The union of every kind's columns, in definition order: the record part of the staging table. */
  readonly stagingColumns: readonly StagingColumn[];
  /** Fields whose JSON numbers must be read as their exact text. */
  readonly decimalFields: ReadonlySet<string>;
  byObject(object: string): RecordKind | undefined;
}

const COMMON_FIELDS = ['object', 'uid', 'created_at', 'updated_at'];

/**
 * The importable collections: every resource definition with an
 * `importLine`. Two collections that share a column name must give it the
 * same SQL type (they share its staging column).
 */
export function recordKindsOf(resources: readonly ResourceDefinition[]): RecordKinds {
  const staging = new Map<string, string>();
  const decimalFields = new Set<string>();
  const importable = resources.flatMap((resource) => (resource.importLine ? [{ resource, line: resource.importLine }] : []));
  for (const { resource, line } of importable) {
    for (const [column, field] of Object.entries(line.fields)) {
      const sqlType = sqlTypeOf(field);
      const existing = staging.get(column);
      if (existing !== undefined && existing !== sqlType) {
        throw new Error(`import field ${resource.table}.${column} is ${sqlType}, but another collection stages ${column} as ${existing}`);
      }
      staging.set(column, sqlType);
      if (field.kind === 'decimal') decimalFields.add(column);
    }
  }
  const stagingColumns = [...staging].map(([name, sqlType]) => ({ name, sqlType }));
  const kinds = importable.map(({ resource, line }): RecordKind => {
    const fields = Object.entries(line.fields);
    const columns = fields.map(([column]) => column);
    const sources = fields.flatMap(([, field]) => (field.kind === 'last-two-digits' ? [field.source] : []));
    return {
      object: line.object,
      table: resource.table,
      uidPrefix: line.uidPrefix,
      fields,
      columns,
      known: new Set([...COMMON_FIELDS, ...columns, ...sources]),
      refused: line.refused ?? {},
      stagingSlots: stagingColumns.map((column) => columns.indexOf(column.name)),
    };
  });
  const byObject = new Map(kinds.map((kind) => [kind.object, kind]));
  return { kinds, stagingColumns, decimalFields, byObject: (object) => byObject.get(object) };
}

function sqlTypeOf(field: ImportField): string {
  return field.kind === 'decimal' ? `numeric(${field.precision}, ${field.scale})` : 'text COLLATE "C"';
}

/** The collections of this service. */
export const RECORD_KINDS: RecordKinds = recordKindsOf(RESOURCES);
