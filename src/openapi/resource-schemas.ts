import { PAGE_SIZE } from '../listing/query-parser.js';
import type { FieldDefinition, ResourceDefinition } from '../listing/resource-definition.js';
import { plainSchema, schemaRef, type JsonObject } from './json-schema.js';
import { capitalize, plural } from './plural.js';

/** The canonical form every timestamp field is written in. */
export const TIMESTAMP_PATTERN = '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{6}Z$';

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
    required: Object.keys(resource.fields),
    properties,
    additionalProperties: false,
  };
}

function fieldSchema(field: FieldDefinition): JsonObject {
  const common = { description: field.description, examples: [field.example], ...(field.enum ? { enum: [...field.enum] } : {}) };
  switch (field.type) {
    case 'string':
      return { type: 'string', ...common };
    case 'timestamp':
      return { type: 'string', format: 'date-time', pattern: TIMESTAMP_PATTERN, ...common };
    case 'decimal':
      return { type: 'number', ...common };
  }
}

/** The page envelope of a collection. */
export function pageSchema(resource: ResourceDefinition): JsonObject {
  const link = (which: string) => ({
    type: ['string', 'null'],
    format: 'uri',
    description: `Absolute URL of the ${which} page, keeping every other parameter; null on the ${which === 'next' ? 'last' : 'first'} page.`,
    examples: [`https://api.example.com/api/${resource.path}/?page=${which === 'next' ? 3 : 1}`],
  });
  return {
    title: pageSchemaName(resource),
    description: `One page of ${plural(resource.name)}: at most ${PAGE_SIZE} items, and the exact count of all that match.`,
    type: 'object',
    required: ['count', 'next', 'previous', 'items'],
    properties: {
      count: { type: 'integer', minimum: 0, description: 'Exact number of matching records.', examples: [105] },
      next: link('next'),
      previous: link('previous'),
      items: { type: 'array', maxItems: PAGE_SIZE, items: schemaRef(resource.schemaName) },
    },
    additionalProperties: false,
  };
}

/** Query parameters of a collection: its filters, `order_by` and `page`. */
export function listParameters(resource: ResourceDefinition): JsonObject[] {
  const filters = resource.filters.map((filter) => {
    const schema = plainSchema(filter.value.schema);
    const examples = Array.isArray(schema.examples) ? schema.examples : [];
    // The value parser's own description says which forms it accepts; add it unless it only repeats the filter's.
    const accepts = typeof schema.description === 'string' && schema.description !== filter.description.replace(/\.$/, '') ? schema.description : undefined;
    return {
      name: filter.param,
      in: 'query',
      required: false,
      description: accepts ? `${filter.description} ${capitalize(accepts)}.` : filter.description,
      schema,
      ...(examples.length > 0 ? { example: examples[0] } : {}),
    };
  });
  const orderings = resource.orderings.flatMap((field) => [field, `-${field}`]);
  return [
    ...filters,
    {
      name: 'order_by',
      in: 'query',
      required: false,
      description: `Sort field; prefix \`-\` for descending. Ties are broken by record id in the same direction, so paging never repeats or skips a record. Default \`${resource.defaultOrdering}\`.`,
      schema: { type: 'string', enum: orderings, default: resource.defaultOrdering },
      example: orderings.find((value) => value !== resource.defaultOrdering) ?? resource.defaultOrdering,
    },
    {
      name: 'page',
      in: 'query',
      required: false,
      description: `Page number, from 1. Pages hold ${PAGE_SIZE} items; a page past the last one is a 404 \`page_out_of_range\`.`,
      schema: { type: 'integer', minimum: 1, default: 1 },
      example: 2,
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
