import { webhookEndpointPaths } from '../../src/openapi/webhook-endpoint-operations.js';
import { readFile } from 'node:fs/promises';
import { Validator } from '@seriousme/openapi-schema-validator';
import { describe, expect, it } from 'vitest';
import { buildApp } from '../helpers/app.js';
import { ERROR_CODES } from '../../src/domain/errors.js';
import { collectionPathOf, type ResourceDefinition } from '../../src/listing/resource-definition.js';
import { identifierValue } from '../../src/listing/value-parsers.js';
import type { JsonObject } from '../../src/openapi/json-schema.js';
import { lendingApiDocument, renderOpenApiJson } from '../../src/openapi/lending-api-document.js';
import { MAX_ERROR_CODE_LENGTH, MAX_ERROR_TITLE_LENGTH, problemResponseName } from '../../src/openapi/problem-responses.js';
import { RESOURCES } from '../../src/resources/index.js';
import { createdAtField, entityFilter, timeRangeFilters, uidField, updatedAtField } from '../../src/resources/common-fields.js';
import { unreachableStore } from '../helpers/unreachable-store.js';

const document = lendingApiDocument();
type Parameter = { name: string; in: string; required: boolean; schema: JsonObject; description?: string; example?: unknown };
type Operation = { operationId: string; parameters: Parameter[]; responses: Record<string, JsonObject>; security?: unknown[] };
const paths = document.paths as Record<string, { get: Operation }>;
const components = document.components as Record<string, Record<string, JsonObject>>;

/** A collection the service does not have, added as docs/architecture.md's recipe says. */
const leases: ResourceDefinition = {
  path: 'leases',
  name: 'lease',
  schemaName: 'Lease',
  description: 'Equipment leased to an entity.',
  table: 'leases',
  fields: {
    uid: uidField('ls'),
    entity: { column: 'entity', type: 'string', description: 'Lessee.', example: 'ent_1' },
    principal: { column: 'principal', type: 'decimal', description: 'Value leased.', example: 5000 },
    status: { column: 'status', type: 'string', description: 'Where the lease stands.', example: 'open', enum: ['open', 'ended'] },
    created_at: createdAtField,
    updated_at: updatedAtField,
  },
  filters: [...timeRangeFilters, entityFilter, { param: 'borrower', field: 'entity', operator: '=', value: identifierValue, description: 'Alias.' }],
  orderings: ['created_at', 'principal'],
  defaultOrdering: '-principal',
};

describe('openapi.json', () => {
  it('is exactly what `npm run openapi` generates from the resource definitions', async () => {
    const committed = await readFile(new URL('../../openapi.json', import.meta.url), 'utf8');
    expect(committed, 'openapi.json is stale: run `npm run openapi` and commit the result').toBe(renderOpenApiJson(document));
  });

  it('is a valid OpenAPI 3.1 document', async () => {
    const validator = new Validator();
    const result = await validator.validate(JSON.parse(renderOpenApiJson(document)) as JsonObject);
    expect(validator.version).toBe('3.1');
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);

    const broken = { ...document, paths: { ...paths, '/broken': { get: { responses: { 200: {} } } } } };
    expect((await validator.validate(broken)).valid, 'a response without a description is invalid').toBe(false);
  });

  it('documents a list and a retrieve operation for every resource (a nested one: its list under the parent), with its record and page schemas', () => {
    expect(Object.keys(paths).sort()).toEqual(
      [
        ...RESOURCES.flatMap((resource) => (resource.parent ? [`/api/${collectionPathOf(resource)}/`] : [`/api/${resource.path}/`, `/api/${resource.path}/{uid}/`])),
        '/api/limits/{uid}/drawdowns/',
        '/api/limits/{uid}/repayments/',
        '/api/loans/{uid}/repayments/',
        '/api/events/',
        '/api/events/{uid}/',
        '/api/events/{uid}/resend/',
        '/api/events/stream/',
        ...Object.keys(webhookEndpointPaths()),
        '/api/portal_sessions/',
        '/api/portal_sessions/current/',
        '/api/portal_sessions/exchange/',
        '/healthz',
        '/readyz',
        '/api/openapi.json',
        '/docs',
      ].sort(),
    );
    expect(paths['/api/limits/{uid}/entries/']!.get.operationId).toBe('listLedgerEntries');
    // Its 404 is either problem: the limit is not found, or the page is past the last one.
    const notFound = JSON.stringify(paths['/api/limits/{uid}/entries/']!.get.responses['404']);
    expect(notFound).toContain('"code":{"const":"not_found"}');
    expect(notFound).toContain('"code":{"const":"page_out_of_range"}');
    expect((components.schemas?.LedgerEntry?.properties as Record<string, JsonObject> | undefined)?.key_id).toMatchObject({ type: ['string', 'null'] });
    for (const resource of RESOURCES) {
      expect(Object.keys(components.schemas?.[resource.schemaName]?.properties ?? {})).toEqual(Object.keys(resource.fields));
      expect(components.schemas?.[`${resource.schemaName}Page`]).toBeDefined();
    }
  });

  it('documents every filter, order_by (each field and its - variant), page and cursor of each list', () => {
    for (const resource of RESOURCES) {
      const documented = paths[`/api/${collectionPathOf(resource)}/`]!.get.parameters;
      // A nested list's first parameter is its parent's uid, in the path.
      if (resource.parent) expect(documented[0]).toMatchObject({ name: 'uid', in: 'path', required: true });
      const parameters = resource.parent ? documented.slice(1) : documented;
      expect(parameters.map((parameter) => parameter.name)).toEqual([...resource.filters.map((filter) => filter.param), 'order_by', 'page', 'cursor']);
      for (const parameter of parameters) {
        expect(parameter.in).toBe('query');
        expect(parameter.required).toBe(false);
        // An example would be pre-filled by /docs "Try it out"; it belongs in the description.
        expect(parameter.example, parameter.name).toBeUndefined();
        expect(parameter.description, parameter.name).toMatch(parameter.name === 'cursor' ? /cursor=/ : /for example `/i);
      }
      const orderBy = parameters.find((parameter) => parameter.name === 'order_by')!;
      expect(orderBy.schema.enum).toEqual(resource.orderings.flatMap((field) => [field, `-${field}`]));
      expect(orderBy.schema.default).toBe(resource.defaultOrdering);
      const createdFrom = parameters.find((parameter) => parameter.name === 'created_from')!;
      // A date alone is accepted too, so the schema must not claim `format: date-time`.
      expect(createdFrom.schema.format).toBeUndefined();
      expect(createdFrom.description).toContain('`2024-05-01`');
    }
  });

  it('documents every code of the error table as a problem+json response', () => {
    for (const [code, { status }] of Object.entries(ERROR_CODES)) {
      const response = components.responses?.[problemResponseName(code as keyof typeof ERROR_CODES)];
      const content = response?.content as Record<string, { example: { code: string; status: number } }>;
      expect(content['application/problem+json']?.example).toMatchObject({ code, status });
    }
    const unauthorized = components.responses?.Unauthorized?.headers as Record<string, JsonObject>;
    expect(unauthorized['WWW-Authenticate']).toBeDefined();
    expect(paths['/api/methods/']!.get.responses['422']).toEqual({ $ref: '#/components/responses/InvalidParameter' });
    expect(paths['/api/methods/{uid}/']!.get.responses['404']).toEqual({ $ref: '#/components/responses/NotFound' });
  });

  it('holds every code and title of the error table to the bounds the Problem schema states', () => {
    for (const [code, { title }] of Object.entries(ERROR_CODES)) {
      expect(code.length, code).toBeLessThanOrEqual(MAX_ERROR_CODE_LENGTH);
      expect(title.length, code).toBeLessThanOrEqual(MAX_ERROR_TITLE_LENGTH);
      expect(code, 'a code becomes the path of its problem type').toMatch(/^[a-z_]+$/);
    }
  });

  it('declares only operations that do something: each answers a 2xx, and every other method is the path\'s x-methods-not-allowed', () => {
    for (const [template, item] of Object.entries(document.paths as Record<string, Record<string, { responses?: Record<string, unknown> }>>)) {
      for (const [method, operation] of Object.entries(item)) {
        if (method.startsWith('x-')) continue;
        expect(Object.keys(operation.responses ?? {}).some((status) => status.startsWith('2')), `${method} ${template}`).toBe(true);
      }
      expect(item['x-methods-not-allowed'], template).toMatchObject({ allow: expect.any(Array), answers: { 405: { $ref: '#/components/responses/MethodNotAllowed' } } });
    }
  });

  it('requires Basic authentication (or a portal session) on the API and none on the probes or the portal link exchange', () => {
    expect(components.securitySchemes?.basicAuth).toMatchObject({ type: 'http', scheme: 'basic' });
    expect(components.securitySchemes?.portalSession).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(document.security).toEqual([{ basicAuth: [] }, { portalSession: [] }]);
    expect(paths['/healthz']!.get.security).toEqual([]);
    expect(paths['/readyz']!.get.security).toEqual([]);
    const posts = document.paths as Record<string, { post: Operation }>;
    expect(posts['/api/portal_sessions/exchange/']!.post.security).toEqual([]);
    // A portal link is made with a key, never with a session.
    expect(posts['/api/portal_sessions/']!.post.security).toEqual([{ basicAuth: [] }]);
  });

  it('documents a new resource with no change to the generator', async () => {
    const withLeases = lendingApiDocument([...RESOURCES, leases]);
    const leasePaths = withLeases.paths as Record<string, { get: Operation }>;
    const list = leasePaths['/api/leases/']!.get;
    expect(list.operationId).toBe('listLeases');
    expect(list.parameters.map((parameter) => parameter.name)).toContain('borrower');
    expect(list.parameters.find((parameter) => parameter.name === 'order_by')?.schema.enum).toEqual(['created_at', '-created_at', 'principal', '-principal']);
    expect(leasePaths['/api/leases/{uid}/']!.get.operationId).toBe('retrieveLease');
    const schemas = (withLeases.components as Record<string, Record<string, JsonObject>>).schemas!;
    expect(schemas.Lease?.properties).toMatchObject({ principal: { type: 'number' }, status: { enum: ['open', 'ended'] } });
    expect((await new Validator().validate(withLeases)).valid).toBe(true);

    const app = await buildApp({ store: unreachableStore(), resources: [...RESOURCES, leases] });
    const served = (await app.inject({ method: 'GET', url: '/api/openapi.json' })).json() as JsonObject;
    await app.close();
    expect(Object.keys(served.paths as JsonObject)).toContain('/api/leases/{uid}/');
  });
});
