import type { TSchema } from '@sinclair/typebox';
import type { ApiRecord } from './api-record.js';

/**
 * What the list engine, the router and the OpenAPI generator know about a
 * collection. Adding a collection is one new file in `src/resources/` that
 * exports one of these, its entry in `src/resources/index.ts`, its migration
 * and its test fixture (docs/architecture.md); nothing else names it.
 *
 * @example
 * export const paymentMethods: ResourceDefinition = {
 *   path: 'methods',
 *   table: 'payment_methods',
 *   fields: { uid: { column: 'uid', type: 'string', … }, … },
 *   filters: [{ param: 'entity', field: 'entity', operator: '=', value: identifierValue, … }],
 *   orderings: ['created_at', 'updated_at', 'entity'],
 *   defaultOrdering: '-created_at',
 * };
 */
export interface ResourceDefinition {
  /** URL segment under `/api/`: `methods` serves `/api/methods/` and `/api/methods/{uid}/`. */
  readonly path: string;
  /** Singular human name, e.g. `payment method`. */
  readonly name: string;
  /** Schema name used in the OpenAPI document, e.g. `PaymentMethod`. */
  readonly schemaName: string;
  readonly description: string;
  readonly table: string;
  /**
   * The table's exact row count and version per organization are kept in
   * `row_counts` by triggers (migrations 003 and 005), so an unfiltered list
   * reads its count there instead of counting rows, and counts and page
   * anchors can be remembered per version. Set it only when the table's
   * migrations install those triggers.
   */
  readonly countedRows?: boolean;
  /**
   * Fields that change without moving the table's version in `row_counts`
   * (migration 005): ledger entries move a credit limit's amounts and
   * updated_at. A list filtered or ordered by one of them is never served
   * from counts or page anchors remembered at an earlier version.
   */
  readonly volatileFields?: readonly string[];
  /** Public fields, serialized in this order. `uid` is the lookup key. */
  readonly fields: Readonly<Record<string, FieldDefinition>>;
  readonly filters: readonly FilterDefinition[];
  /** Fields accepted by `order_by`; each must be served by an index leading with org_id. */
  readonly orderings: readonly string[];
  /** `field` or `-field`. */
  readonly defaultOrdering: string;
  /** How `lending-api import` writes this collection; absent: not importable. */
  readonly importLine?: ImportLineDefinition;
  /**
   * The unique bigint column that breaks ties in every ordering and finds a
   * page's rows (a unique index must lead with it); `id` when absent.
   */
  readonly rowId?: string;
  /**
   * The column a partitioned table is partitioned by: a page's rows are
   * found by it beside their row id, so each is read in its own partition
   * (by id alone, every partition's index was probed for each row).
   */
  readonly partitionKey?: string;
  /**
   * A collection listed under one record of another (`/api/limits/{uid}/entries/`):
   * the parent's uid is looked up in the caller's organization (unknown: a
   * 404 naming it) and the list holds only the rows whose `column` is its
   * row id. Every ordering and filter index leads with (org_id, column).
   * A nested collection has no retrieve route and needs no uid field.
   */
  readonly parent?: ParentDefinition;
  /**
   * Renders a selected row (each field's exact text under its name) into the
   * record, for a collection whose JSON is not its columns one for one: an
   * event renders `data.object` from a `json` field by the definition of the
   * record the event is about (src/events/event-rendering.ts). The fields are
   * then what is selected, filtered and ordered by; absent, each field is
   * rendered as itself, in definition order.
   */
  readonly renderRow?: (row: Readonly<Record<string, string | null>>) => ApiRecord;
  /**
   * The events of this collection's records, when its migration calls
   * events_track (migration 017) with the same object: `object` is their
   * types' prefix (`lease` → `lease.created`, `lease.updated`), `types` the
   * suffixes when not those two (ledger entries are never changed; loans add
   * `repaid`). Event types, their OpenAPI payloads and what endpoints may
   * subscribe to derive from it (src/events/event-types.ts); the start-up
   * schema check compares it with the table's triggers.
   */
  readonly events?: { readonly object: string; readonly types?: readonly string[] };
}

/** The event types of a collection's records (`lease.created`, `lease.updated` unless its definition lists others); none without `events`. */
export function eventTypesOf(resource: ResourceDefinition): string[] {
  const events = resource.events;
  return events ? (events.types ?? ['created', 'updated']).map((type) => `${events.object}.${type}`) : [];
}

export interface ParentDefinition {
  readonly resource: ResourceDefinition;
  /** Column of this table holding the parent's row id (trusted SQL, never user input). */
  readonly column: string;
}

/** The unique bigint row id column of a resource's table (the tie-breaker of every ordering). */
export function rowIdOf(resource: ResourceDefinition): string {
  return resource.rowId ?? 'id';
}

/** The columns that find a page's rows again: the row id, and the partition key of a partitioned table. */
export function pageKeyOf(resource: ResourceDefinition): string {
  return resource.partitionKey === undefined ? rowIdOf(resource) : `${rowIdOf(resource)}, ${resource.partitionKey}`;
}

/**
 * The collection's path under `/api/`, without slashes at the ends:
 * `methods`, or for a nested collection `limits/{uid}/entries` (the
 * template) or `limits/cl_1/entries` (given the parent's uid).
 */
export function collectionPathOf(resource: ResourceDefinition, parentUid = '{uid}'): string {
  return resource.parent ? `${collectionPathOf(resource.parent.resource)}/${parentUid}/${resource.path}` : resource.path;
}

/** `json`: a jsonb column, selected as its text and rendered as the JSON it holds. */
export type FieldType = 'string' | 'timestamp' | 'decimal' | 'json';

export interface FieldDefinition {
  /** Column of the resource's table (trusted SQL, never user input). */
  readonly column: string;
  readonly type: FieldType;
  readonly description: string;
  readonly example: string | number;
  readonly enum?: readonly string[];
  /** The longest value the column holds (its CHECK), for the OpenAPI document. */
  readonly maxLength?: number;
  /** A pattern every value of the column matches (its CHECK), for the OpenAPI document. */
  readonly pattern?: string;
  /** The column may be NULL: the field is then `null` (e.g. an entry's key_id when no key wrote it). */
  readonly nullable?: boolean;
  /**
   * Added to a collection after the current API version was released: always
   * sent, but not `required` in the OpenAPI schema, so a client validating
   * against the released document keeps working (docs/api.md "Versioning").
   */
  readonly addedWithinVersion?: boolean;
}

export interface FilterDefinition {
  /** Query parameter name. */
  readonly param: string;
  /** The field it compares. */
  readonly field: string;
  /** `= any`: the value is a PostgreSQL array literal (`{a,b}`) and the column equals one of its elements. */
  readonly operator: '=' | '>=' | '<=' | '= any';
  readonly value: ValueParser;
  readonly description: string;
  /**
   * Compares this column instead of the field's: only the engine's own
   * parent filter (a nested collection's parent row id, no public field).
   */
  readonly column?: string;
}

export type ParseResult = { ok: true; value: string } | { ok: false; reason: string };

/** Turns one raw query value into the SQL parameter it stands for. */
export interface ValueParser {
  parse(raw: string): ParseResult;
  /** JSON Schema of the raw parameter, for the OpenAPI document. */
  readonly schema: TSchema;
}

/**
 * The write side of a collection: how an import line (`{"object": …}`)
 * creates or updates one of its records, upserted by uid. The import reads
 * only this: a collection with an `importLine` is importable with no edit to
 * `src/import/`.
 *
 * @example
 * importLine: {
 *   object: 'entity',
 *   uidPrefix: 'ent',
 *   fields: { name: { kind: 'text', maxLength: 200 }, country: { kind: 'country' } },
 * }
 */
export interface ImportLineDefinition {
  /** The line's `object`, e.g. `payment_method`. */
  readonly object: string;
  /** A line without a uid gets `<uidPrefix>_<32 hex digits>`. */
  readonly uidPrefix: string;
  /**
   * The columns a line writes besides uid, created_at and updated_at, keyed
   * by column name, in the order they are staged. Each is required unless
   * it is `optional` (then staged as NULL when absent).
   */
  readonly fields: Readonly<Record<string, ImportField>>;
  /** Fields a line may not give, with the reason (e.g. `outstanding`: only ledger lines move it). */
  readonly refused?: Readonly<Record<string, string>>;
  /**
   * `loan`: a line of this object draws on a credit limit (its outstanding
   * moves the limit like a drawdown line), so it is merged by
   * `src/import/merge-loans.ts` with the ledger's rules instead of upserted.
   */
  readonly ledger?: 'loan';
  /**
   * The collection's records in the demo organization (`lending-api demo`), as import lines without
   * their `object`: at least the record whose uid is the `uid` field's example, which /docs pre-fills in
   * "Try it out". Loaded after every other demo line, so they may refer to the demo's entities
   * (`ent_demo_01`…), payment methods and credit limits.
   */
  readonly demo?: readonly Readonly<Record<string, string>>[];
}

/** How one import field is validated and canonicalized; each kind is a rule of `src/import/`. */
export type ImportField = ImportFieldRule & { readonly optional?: boolean };

export type ImportFieldRule =
  /**
   * 1–255 characters, no control characters (a uid of another record, e.g.
   * `entity`). With `references`, the uid of a record of that collection: the
   * import reports a line whose record neither the store nor the file has.
   */
  | { readonly kind: 'identifier'; readonly references?: ResourceDefinition }
  /** Free text of 1–maxLength characters, no control characters; kept as given. */
  | { readonly kind: 'text'; readonly maxLength: number }
  /** One of `values`, any letter case; stored as `values` spells it. */
  | { readonly kind: 'enum'; readonly values: readonly string[] }
  /** An active ISO 4217 code, any letter case; stored upper case. */
  | { readonly kind: 'currency' }
  /** An assigned ISO 3166-1 alpha-2 code, any letter case; stored upper case. */
  | { readonly kind: 'country' }
  /** An exact decimal (JSON string or number), checked on its text against the column's NUMERIC(p, s). */
  | { readonly kind: 'decimal'; readonly precision: number; readonly scale: number; readonly allowZero: boolean }
  /**
   * Two digits, given as such or as the write-only `source` field (an
   * account number) whose last two digits are kept: the source itself is
   * never stored, logged or quoted.
   */
  | { readonly kind: 'last-two-digits'; readonly source: string };
