import { API_VERSION } from '../domain/api-version.js';
import type { ResourceDefinition } from '../listing/resource-definition.js';
import { RESOURCES } from '../resources/index.js';
import type { JsonObject } from './json-schema.js';
import { buildOpenApiDocument } from './openapi-document.js';

/** The document this build of the service serves and commits as `openapi.json`. */
export function lendingApiDocument(resources: readonly ResourceDefinition[] = RESOURCES): JsonObject {
  return buildOpenApiDocument({ resources, version: API_VERSION });
}

/** The committed file's exact text: stable key order, two-space indent, final newline. */
export function renderOpenApiJson(document: JsonObject): string {
  return `${JSON.stringify(document, null, 2)}\n`;
}
