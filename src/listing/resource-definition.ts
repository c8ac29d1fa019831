import type { TSchema } from '@sinclair/typebox';

/**
 * What the list engine, the router and the OpenAPI generator know about a
 * collection. Adding a collection is one new file in `src/resources/` that
 * exports one of these (plus its migration); nothing else names it.
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
}

export type FieldType = 'string' | 'timestamp' | 'decimal';

export interface FieldDefinition {
  /** Column of the resource's table (trusted SQL, never user input). */
  readonly column: string;
  readonly type: FieldType;
  readonly description: string;
  readonly example: string | number;
  readonly enum?: readonly string[];
}

export interface FilterDefinition {
  /** Query parameter name. */
  readonly param: string;
  /** The field it compares. */
  readonly field: string;
  readonly operator: '=' | '>=' | '<=';
  readonly value: ValueParser;
  readonly description: string;
}

export type ParseResult = { ok: true; value: string } | { ok: false; reason: string };

/** Turns one raw query value into the SQL parameter it stands for. */
export interface ValueParser {
  parse(raw: string): ParseResult;
  /** JSON Schema of the raw parameter, for the OpenAPI document. */
  readonly schema: TSchema;
}
