import { randomUUID } from 'node:crypto';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../helpers/app.js';
import { loadConfig } from '../../src/config.js';
import { rateLimitHeaderSchemas } from '../../src/openapi/answer-headers.js';
import type { JsonObject } from '../../src/openapi/json-schema.js';
import { lendingApiDocument } from '../../src/openapi/lending-api-document.js';
import { createApiKey } from '../../src/auth/api-keys.js';
import { describeEachStore } from '../helpers/stores.js';
import { basicAuthorization, createTenant, type Tenant } from '../helpers/tenants.js';
import { useWriter } from '../helpers/writes.js';

const document = lendingApiDocument();
type Parameter = { name: string; in: 'query' | 'path' | 'header'; schema: JsonObject & { maxLength?: number; maximum?: number; type?: string } };
type Operation = { parameters?: (Parameter | { $ref: string })[]; requestBody?: { content: Record<string, { schema: { $ref: string } }> }; 'x-required-scope'?: string };
const paths = document.paths as Record<string, Record<string, Operation>>;
const components = document.components as { parameters: Record<string, Parameter>; schemas: Record<string, { properties?: Record<string, JsonObject & { maxLength?: number }> }> };

const parameterOf = (parameter: Parameter | { $ref: string }): Parameter =>
  '$ref' in parameter ? components.parameters[parameter.$ref.split('/').at(-1)!]! : parameter;

/** Every (operation, parameter) whose schema declares a bound: maxLength on a string, maximum on an integer. */
const boundedParameters = Object.entries(paths).flatMap(([template, item]) =>
  (['get', 'post'] as const).flatMap((method) =>
    (item[method]?.parameters ?? []).map(parameterOf).flatMap((parameter) =>
      parameter.schema.maxLength !== undefined || parameter.schema.maximum !== undefined ? [{ template, method, parameter }] : [],
    ),
  ),
);

/** Every (write operation, body member) whose schema declares a maxLength. */
const boundedMembers = Object.entries(paths).flatMap(([template, item]) => {
  const ref = item.post?.requestBody?.content['application/json']?.schema.$ref;
  if (!ref) return [];
  const properties = components.schemas[ref.split('/').at(-1)!]!.properties;
  return Object.entries(properties ?? {}).flatMap(([member, schema]) => (schema.maxLength === undefined ? [] : [{ template, member, maxLength: schema.maxLength }]));
});

/** A value just over the bound: one character more than maxLength, or one more than maximum. */
function justOver(schema: Parameter['schema']): string {
  if (schema.maximum !== undefined) return String(BigInt(schema.maximum) + 1n);
  return 'a'.repeat(schema.maxLength! + 1);
}

describe('the bounds the document declares on what a request sends', () => {
  it('are found on every list parameter, path uid, Idempotency-Key and write body member', () => {
    expect(boundedParameters.filter(({ parameter }) => parameter.in === 'query').length).toBeGreaterThan(25);
    expect(new Set(boundedParameters.map(({ parameter }) => parameter.in))).toEqual(new Set(['query', 'path', 'header']));
    expect(boundedMembers.map(({ member }) => member).sort()).toEqual(
      ['amount', 'at', 'reference', 'amount', 'at', 'reference', 'credit_limit', 'payment_method', 'principal', 'reference', 'amount', 'at', 'reference', 'endpoint', 'url', 'description', 'url', 'description', 'since', 'until', 'token'].sort(),
    );
  });
});

describe('the bounds the document declares on the rate-limit headers', () => {
  it('are those of the settings: no budget over X-RateLimit-Limit\'s maximum is accepted', () => {
    const { limit, remaining } = rateLimitHeaderSchemas();
    expect(remaining.maximum).toBe(limit.maximum);
    for (const name of ['RATE_LIMIT_PER_MINUTE', 'WRITE_RATE_LIMIT_PER_MINUTE', 'AUTH_FAILURES_PER_MINUTE']) {
      expect(() => loadConfig({ [name]: String(limit.maximum) }), name).not.toThrow();
      expect(() => loadConfig({ [name]: String(Number(limit.maximum) + 1) }), name).toThrow(name);
    }
  });
});

describeEachStore('a value just over a declared bound is refused', (store) => {
  let app: FastifyInstance;
  let reader: Tenant;
  let limit: string;
  /** The writer's organization's key with the webhooks scope (an event's resend). */
  let webhooks: string;
  let hooks: Tenant;
  let endpoint: string;
  const { writer, newLimit } = useWriter(store);

  beforeAll(async () => {
    app = await buildApp({ store: store(), rateLimit: { perMinute: 0, writesPerMinute: 0, authFailuresPerMinute: 0 } });
    reader = await createTenant(store());
    limit = await newLimit('100.00');
    webhooks = basicAuthorization(writer().org.uid, (await createApiKey(store(), writer().org.uid, undefined, 'webhooks')).key);
    hooks = await createTenant(store(), 'Hooks', 'webhooks');
    const created = await app.inject({ method: 'POST', url: '/api/webhook_endpoints/', headers: { authorization: hooks.authorization, 'content-type': 'application/json' }, payload: '{"url":"https://hooks.example.com/","enabled_events":["*"]}' });
    endpoint = created.json<{ id: string }>().id;
  });
  afterAll(async () => {
    await app.close();
  });

  /** A webhooks-scoped operation is called with a webhooks key on its organization's endpoint; the others with the writer's key on its limit. */
  const scoped = (template: string) => Object.values(paths[template] ?? {}).some((operation) => operation['x-required-scope'] === 'webhooks');
  const urlOf = (template: string, uid = scoped(template) ? endpoint : limit) => template.replaceAll('{uid}', encodeURIComponent(uid));
  const authorizationFor = (template: string) => (scoped(template) ? hooks.authorization : writer().authorization);

  it('in the query: 422 naming the parameter, or, for a page, 404 page_out_of_range', async () => {
    for (const { template, parameter } of boundedParameters.filter(({ parameter }) => parameter.in === 'query')) {
      const value = justOver(parameter.schema);
      // The writer's: the nested list's parent is its limit.
      const response = await app.inject({ method: 'GET', url: `${urlOf(template)}?${parameter.name}=${value}`, headers: { authorization: authorizationFor(template) } });
      const what = `${template} ${parameter.name}=${value.slice(0, 20)}… (${value.length} characters)`;
      if (parameter.name === 'page') {
        expect(response.statusCode, what).toBe(404);
        expect(response.json(), what).toMatchObject({ code: 'page_out_of_range' });
      } else {
        expect(response.statusCode, what).toBe(422);
        expect(response.json().errors, what).toContainEqual(expect.objectContaining({ param: parameter.name }));
      }
    }
  });

  it('in the path: 404 for a uid longer than any record has', async () => {
    for (const { template, method, parameter } of boundedParameters.filter(({ parameter }) => parameter.in === 'path')) {
      const response = await app.inject({ method: method.toUpperCase() as 'GET', url: urlOf(template, justOver(parameter.schema)), headers: { authorization: authorizationFor(template) } });
      expect(response.statusCode, `${method} ${template}`).toBe(404);
      expect(response.json()).toMatchObject({ code: 'not_found' });
    }
  });

  it('in a header: 400 idempotency_key_invalid for an Idempotency-Key one character too long, 422 for a Last-Event-ID', async () => {
    const lastEventIds = boundedParameters.filter(({ parameter }) => parameter.in === 'header' && parameter.name === 'Last-Event-ID');
    expect(lastEventIds.map(({ template }) => template)).toEqual(['/api/events/stream/']);
    for (const { template, parameter } of lastEventIds) {
      const response = await app.inject({ url: urlOf(template), headers: { authorization: reader.authorization, 'last-event-id': justOver(parameter.schema) } });
      expect(response.statusCode, template).toBe(422);
      expect(response.json().errors).toContainEqual(expect.objectContaining({ param: 'Last-Event-ID' }));
    }
    const headers = boundedParameters.filter(({ parameter }) => parameter.in === 'header' && parameter.name !== 'Last-Event-ID');
    expect(headers.length).toBe(4);
    for (const { template, parameter } of headers) {
      const response = await post(urlOf(template), { amount: '1.00' }, { [parameter.name.toLowerCase()]: justOver(parameter.schema) });
      expect(response.statusCode, template).toBe(400);
      expect(response.json()).toMatchObject({ code: 'idempotency_key_invalid' });
    }
  });

  it('in a write body: 422 naming the member, or 413 when the member alone is longer than a body may be', async () => {
    for (const { template, member, maxLength } of boundedMembers) {
      const body = { amount: '1.00', credit_limit: limit, payment_method: 'pm_none', principal: '1.00', [member]: 'a'.repeat(maxLength + 1) };
      const response = await post(urlOf(template), body, {}, authorizationFor(template));
      const what = `${template} ${member} of ${maxLength + 1} characters`;
      if (response.statusCode === 413) {
        expect(JSON.stringify(body).length, what).toBeGreaterThan(maxLength);
        expect(response.json()).toMatchObject({ code: 'payload_too_large' });
      } else {
        expect(response.statusCode, what).toBe(422);
        expect(response.json().errors, what).toContainEqual(expect.objectContaining({ param: member }));
      }
    }
  });

  it('and a value at the bound is not refused for its length, counted in characters as maxLength counts them', async () => {
    for (const character of ['e', '\u{1F600}']) {
      const entity = (count: number) => app.inject({ method: 'GET', url: `/api/methods/?entity=${encodeURIComponent(character.repeat(count))}`, headers: { authorization: reader.authorization } });
      expect((await entity(255)).statusCode, character).toBe(200);
      expect((await entity(256)).statusCode, character).toBe(422);
    }
    const reference = await post(urlOf('/api/limits/{uid}/drawdowns/'), { amount: '1.00', reference: 'r'.repeat(255) }, { 'idempotency-key': 'k'.repeat(255) });
    expect(reference.statusCode).toBe(201);
  });

  function post(url: string, body: JsonObject, headers: Record<string, string> = {}, authorization = writer().authorization): Promise<LightMyRequestResponse> {
    return app.inject({
      method: 'POST',
      url,
      headers: { authorization: url.includes('/resend/') ? webhooks : authorization, 'content-type': 'application/json', 'idempotency-key': randomUUID(), ...headers },
      payload: JSON.stringify(body),
    });
  }
});
