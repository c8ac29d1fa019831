/**
 * Writes openapi.json (from the resource definitions and the error table) and
 * src/client/generated.ts (the SDK's types, from that document).
 * Run with `npm run openapi`.
 */
import { writeFile } from 'node:fs/promises';
import { lendingApiDocument, renderOpenApiJson } from '../src/openapi/lending-api-document.js';
import { renderClientTypes } from './client-types.js';

export const OPENAPI_FILE = new URL('../openapi.json', import.meta.url);
export const CLIENT_TYPES_FILE = new URL('../src/client/generated.ts', import.meta.url);

const document = lendingApiDocument();
await writeFile(OPENAPI_FILE, renderOpenApiJson(document));
await writeFile(CLIENT_TYPES_FILE, await renderClientTypes(document));
console.log('wrote openapi.json and src/client/generated.ts');
