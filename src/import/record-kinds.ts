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
  /** Lines that draw on a credit limit (merge-loans.ts) rather than being upserted by merge-records.ts. */
  readonly ledger: 'loan' | undefined;
  /** The fields that hold the uid of another collection's record: the import checks each exists. */
  readonly references: readonly RecordReference[];
}

export interface RecordReference {
  readonly column: string;
  readonly resource: ResourceDefinition;
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
 * Columns the import's own tables hold beside the collections' fields: the
 * staging table's line, object, uid and timestamps, its ledger_… columns
 * (staging.ts) and the merge's merge_… columns (merge-records.ts). A field
 * named like one would be a second column of that name.
 */
export function isEngineColumn(column: string): boolean {
  return ['line', ...COMMON_FIELDS].includes(column) || column.startsWith('ledger_') || column.startsWith('merge_');
}

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
      if (isEngineColumn(column)) {
        throw new Error(`import field ${resource.table}.${column} is named like a column of the import's own (line, object, uid, created_at, updated_at, ledger_…, merge_…): rename it`);
      }
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
      ledger: line.ledger,
      references: fields.flatMap(([column, field]) => (field.kind === 'identifier' && field.references ? [{ column, resource: field.references }] : [])),
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
