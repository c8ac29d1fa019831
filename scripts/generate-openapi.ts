/**
 * Writes openapi.json (from the resource definitions and the error table) and
 * the SDK's generated modules in packages/client/src/ (its types and
 * collection classes, from that document).
 * Run with `npm run openapi`.
 */
import { writeFile } from 'node:fs/promises';
import { lendingApiDocument, renderOpenApiJson } from '../src/openapi/lending-api-document.js';
import { renderClientModules } from './client-types.js';

export const OPENAPI_FILE = new URL('../openapi.json', import.meta.url);
export const CLIENT_SOURCES = new URL('../packages/client/src/', import.meta.url);

const document = lendingApiDocument();
await writeFile(OPENAPI_FILE, renderOpenApiJson(document));
for (const [name, source] of Object.entries(await renderClientModules(document))) await writeFile(new URL(name, CLIENT_SOURCES), source);
console.log('wrote openapi.json, packages/client/src/generated.ts and packages/client/src/generated-collections.ts');
