import { readFile, readdir } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { API_VERSION } from '../../src/domain/api-version.js';
import type { JsonObject } from '../../src/openapi/json-schema.js';
import { lendingApiDocument } from '../../src/openapi/lending-api-document.js';
import { breakingChanges } from '../helpers/breaking-changes.js';

const RELEASED = new URL('../../openapi/released/', import.meta.url);

async function released(version: string): Promise<JsonObject> {
  return JSON.parse(await readFile(new URL(`${version}.json`, RELEASED), 'utf8')) as JsonObject;
}

describe('API versioning (docs/api.md "Versioning")', () => {
  it('keeps the released document of the current version, and it is the latest one released', async () => {
    const versions = (await readdir(RELEASED)).filter((name) => name.endsWith('.json')).map((name) => name.slice(0, -'.json'.length));
    expect(versions).toContain(API_VERSION);
    expect([...versions].sort().at(-1)).toBe(API_VERSION);
    expect(((await released(API_VERSION)).info as JsonObject).version).toBe(API_VERSION);
  });

  it('changes the document only additively within the version: no breaking change against the released document', async () => {
    expect(
      breakingChanges(await released(API_VERSION), lendingApiDocument()),
      `a breaking change ships as a new API version (docs/api.md "Versioning"): set API_VERSION in src/domain/api-version.ts and copy openapi.json to openapi/released/<version>.json`,
    ).toEqual([]);
  });

  it('classes an added optional response field, an added path, an optional parameter and a new error code as additive', async () => {
    const after = structuredClone(await released(API_VERSION));
    const schemas = (after.components as { schemas: Record<string, { properties: Record<string, JsonObject>; required?: string[] }> }).schemas;
    schemas.LedgerEntry!.properties.lease = { type: ['string', 'null'], maxLength: 255, description: 'The lease this entry belongs to.' };
    const paths = after.paths as Record<string, Record<string, { parameters: JsonObject[] }>>;
    paths['/api/leases/'] = { get: { operationId: 'listLeases', parameters: [], responses: { 200: { description: 'A page of leases.' } } } as never };
    paths['/api/methods/']!.get!.parameters.push({ name: 'lease', in: 'query', required: false, schema: { type: 'string', maxLength: 255 } });
    (schemas.Problem!.properties.code as { enum: string[] }).enum.push('loan_closed');
    expect(breakingChanges(await released(API_VERSION), after)).toEqual([]);
  });

  it('classes a removed field, a removed path, a new required body member and a narrower parameter as breaking', async () => {
    const before = await released(API_VERSION);
    const cases: Record<string, (document: JsonObject) => void> = {
      'a response field removed': (document) => {
        const entry = (document.components as { schemas: Record<string, { properties: Record<string, unknown>; required: string[] }> }).schemas.LedgerEntry!;
        delete entry.properties.reference;
        entry.required = entry.required.filter((name) => name !== 'reference');
      },
      'a path removed': (document) => {
        delete (document.paths as Record<string, unknown>)['/api/entities/'];
      },
      'a required body member added': (document) => {
        const input = (document.components as { schemas: Record<string, { properties: Record<string, unknown>; required: string[] }> }).schemas.LedgerEntryInput!;
        input.properties.loan = { type: 'string' };
        input.required.push('loan');
      },
      'an order_by value removed': (document) => {
        const parameters = (document.paths as Record<string, { get: { parameters: { name: string; schema: { enum: string[] } }[] } }>)['/api/methods/']!.get.parameters;
        parameters.find((parameter) => parameter.name === 'order_by')!.schema.enum.pop();
      },
    };
    for (const [name, change] of Object.entries(cases)) {
      const after = structuredClone(before);
      change(after);
      expect(breakingChanges(before, after).length, name).toBeGreaterThan(0);
    }
  });
});
