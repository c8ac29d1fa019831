/** A JSON Schema (2020-12, the OpenAPI 3.1 dialect) or any other plain JSON object of the document. */
export type JsonObject = { [key: string]: unknown };

/** `#/components/schemas/Name` */
export function schemaRef(name: string): JsonObject {
  return { $ref: `#/components/schemas/${name}` };
}

/** Plain JSON of a TypeBox schema: its symbol-keyed bookkeeping is dropped. */
export function plainSchema(schema: object): JsonObject {
  return JSON.parse(JSON.stringify(schema)) as JsonObject;
}
