import { MAX_LINK_LENGTH } from '../listing/page-links.js';
import { PAGE_SIZE } from '../listing/query-parser.js';
import { collectionPathOf, type FieldDefinition, type ResourceDefinition } from '../listing/resource-definition.js';
import { plainSchema, schemaRef, type JsonObject } from './json-schema.js';
import { capitalize, plural } from './plural.js';

/** The canonical form every timestamp field is written in. */
export const TIMESTAMP_PATTERN = '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{6}Z$';
/** Its length: `2024-05-01T10:00:00.123456Z`. */
const TIMESTAMP_LENGTH = 27;

/**
 * The most records a count can name, and the highest page: JSON numbers are
 * exact integers up to 2^53 − 1, and no store holds that many records. A
 * `page` above it is a 404 `page_out_of_range`, as any page past the last.
 */
export const MAX_COUNT = Number.MAX_SAFE_INTEGER;

/** `count`, `last_page`, `page`: exact integers from `minimum` to MAX_COUNT. */
export function countSchema(minimum: number): JsonObject {
  return { type: 'integer', format: 'int64', minimum, maximum: MAX_COUNT };
}

export function pageSchemaName(resource: ResourceDefinition): string {
  return `${resource.schemaName}Page`;
}

/** The JSON schema of one record, field by field, in serialization order. */
export function recordSchema(resource: ResourceDefinition): JsonObject {
  const properties = Object.fromEntries(Object.entries(resource.fields).map(([name, field]) => [name, fieldSchema(field)]));
  return {
    title: resource.schemaName,
    description: resource.description,
    type: 'object',
    required: Object.entries(resource.fields).flatMap(([name, field]) => (field.addedWithinVersion ? [] : [name])),
    properties,
    additionalProperties: false,
  };
}

function fieldSchema(field: FieldDefinition): JsonObject {
  const common = { description: field.description, examples: [field.example] };
  const type = (name: string) => (field.nullable ? [name, 'null'] : name);
  const values = field.enum ? { enum: field.nullable ? [...field.enum, null] : [...field.enum] } : {};
  const bounds = { ...(field.maxLength === undefined ? {} : { maxLength: field.maxLength }), ...(field.pattern === undefined ? {} : { pattern: field.pattern }) };
  switch (field.type) {
    case 'string':
      return { type: type('string'), ...bounds, ...common, ...values };
    case 'timestamp':
      return { type: type('string'), format: 'date-time', maxLength: TIMESTAMP_LENGTH, pattern: TIMESTAMP_PATTERN, ...common, ...values };
    case 'decimal':
      return { type: type('number'), ...common, ...values };
    case 'json':
      return { type: type('object'), ...common };
  }
}

/** The page envelope of a collection. */
export function pageSchema(resource: ResourceDefinition): JsonObject {
  const link = (which: string) => ({
    type: ['string', 'null'],
    format: 'uri',
    // The bound page-links.ts derives: PUBLIC_URL's or the request's base, the path, and the request's parameters re-encoded.
    maxLength: MAX_LINK_LENGTH,
    description:
      `Absolute URL of the ${which} page, keeping every other parameter; null on the ${which === 'next' ? 'last' : 'first'} page. ` +
      `In a cursor walk its \`cursor\` continues ${which === 'next' ? 'after the last' : 'before the first'} item of this page.`,
    examples: [`https://api.example.com/api/${collectionPathOf(resource, String(resource.parent?.resource.fields.uid?.example ?? '{uid}'))}/?page=${which === 'next' ? 3 : 1}`],
  });
  return {
    title: pageSchemaName(resource),
    description: `One page of ${plural(resource.name)}: at most ${PAGE_SIZE} items, and the exact count of all that match.`,
    type: 'object',
    required: ['count', 'next', 'previous', 'items'],
    properties: {
      count: { ...countSchema(0), description: 'Exact number of matching records.', examples: [105] },
      next: link('next'),
      previous: link('previous'),
      items: { type: 'array', maxItems: PAGE_SIZE, items: schemaRef(resource.schemaName) },
    },
    additionalProperties: false,
  };
}

/**
 * Query parameters of a collection: its filters, `order_by`, `page` and
 * `cursor`. Examples go in the descriptions, never in `example`/`examples`:
 * Swagger UI's "Try it out" pre-fills those, and pre-filled examples (an
 * entity nobody has, page 2 of a one-page list) turn a first click into a
 * 404.
 */
export function listParameters(resource: ResourceDefinition): JsonObject[] {
  const filters = resource.filters.map((filter) => {
    const { examples, ...schema } = plainSchema(filter.value.schema);
    const shown = Array.isArray(examples) && examples.length > 0 ? ` For example ${examples.map((example) => `\`${String(example)}\``).join(' or ')}.` : '';
    // The value parser's own description says which forms it accepts; add it unless it only repeats the filter's.
    const accepts = typeof schema.description === 'string' && schema.description !== filter.description.replace(/\.$/, '') ? schema.description : undefined;
    return {
      name: filter.param,
      in: 'query',
      required: false,
      description: (accepts ? `${filter.description} ${capitalize(accepts)}.` : filter.description) + shown,
      schema,
    };
  });
  const orderings = resource.orderings.flatMap((field) => [field, `-${field}`]);
  return [
    ...filters,
    {
      name: 'order_by',
      in: 'query',
      required: false,
      description: `Sort field; prefix \`-\` for descending, for example \`${orderings.find((value) => value !== resource.defaultOrdering) ?? resource.defaultOrdering}\`. Ties are broken by record id in the same direction, so paging never repeats or skips a record. Default \`${resource.defaultOrdering}\`.`,
      schema: { type: 'string', enum: orderings, default: resource.defaultOrdering },
    },
    {
      name: 'page',
      in: 'query',
      required: false,
      description: `Page number, from 1, for example \`2\`. Pages hold ${PAGE_SIZE} items; a page past the last one is a 404 \`page_out_of_range\`. Not with \`cursor\`.`,
      schema: { ...countSchema(1), default: 1 },
    },
    {
      name: 'cursor',
      in: 'query',
      required: false,
      description:
        `Keyset pages instead of page numbers, for walking a list that changes while you read it. ` +
        `Give it empty (\`cursor=\`) to start at the first record; then follow \`next\` (or \`previous\`), whose links carry the cursor that continues after the last record (before the first). ` +
        `A record that matches and does not change during the walk is returned exactly once; with \`order_by=updated_at\` a record that changes is returned again, in its latest state (the way to sync). ` +
        `Opaque and signed: it continues only the list it came from (same organization, collection, filters and ordering), else a 422 \`invalid_parameter\` says why. \`count\` stays exact. Not with \`page\` (422).`,
      schema: { type: 'string', maxLength: 4096 },
    },
  ];
}

export function uidParameter(resource: ResourceDefinition): JsonObject {
  return {
    name: 'uid',
    in: 'path',
    required: true,
    description: `UID of the ${resource.name}.`,
    schema: { type: 'string', minLength: 1, maxLength: 255 },
    example: resource.fields.uid?.example ?? 'uid_1',
  };
}

/** The `{uid}` path parameter of a nested collection: its parent record's uid. */
export function parentUidParameter(parent: ResourceDefinition): JsonObject {
  return { ...uidParameter(parent), description: `UID of the ${parent.name} whose records are listed.` };
}
