import { METHODS } from 'node:http';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../helpers/app.js';
import { API_VERSION } from '../../src/domain/api-version.js';
import type { JsonObject } from '../../src/openapi/json-schema.js';
import { lendingApiDocument } from '../../src/openapi/lending-api-document.js';
import { METHODS_NOT_ALLOWED } from '../../src/openapi/methods-not-allowed.js';
import { OpenApiContract } from '../helpers/openapi-contract.js';
import { describeEachStore } from '../helpers/stores.js';
import { createTenant, type Tenant } from '../helpers/tenants.js';
import { postEntry, useWriter } from '../helpers/writes.js';

const document = lendingApiDocument();
const contract = new OpenApiContract(document);
const paths = document.paths as Record<string, Record<string, JsonObject>>;

/** A URL of the template, with `filler` for each path parameter. */
const urlOf = (template: string, filler = 'x_1') => template.replaceAll(/\{[^}]+\}/g, filler);

function expectDeclared(method: string, template: string, response: Awaited<ReturnType<FastifyInstance['inject']>>) {
  expect(contract.check(method, template, response), `${method} ${template} → ${response.statusCode} ${response.body.slice(0, 300)}`).toEqual([]);
}

describeEachStore('every answer the service gives is declared in the document', (store) => {
  let app: FastifyInstance;
  let reader: Tenant;
  const { writer, newLimit } = useWriter(store);

  beforeAll(async () => {
    app = await buildApp({ store: store(), rateLimit: { perMinute: 1000, writesPerMinute: 1000, authFailuresPerMinute: 20 } });
    reader = await createTenant(store());
  });
  afterAll(async () => {
    await app.close();
  });

  it('answers 405 with the declared Allow for every method a path does not serve, as its x-methods-not-allowed says', async () => {
    let checked = 0;
    for (const [template, item] of Object.entries(paths)) {
      const allow = (item[METHODS_NOT_ALLOWED] as { allow: string[] }).allow;
      // Every method the HTTP parser accepts but CONNECT (a tunnel, which names no path).
      for (const method of METHODS.filter((candidate) => candidate !== 'CONNECT' && !allow.includes(candidate))) {
        const response = await app.inject({ method: method as 'PUT', url: urlOf(template), headers: { authorization: reader.authorization } });
        expect(response.statusCode, `${method} ${template}`).toBe(405);
        expect(response.headers.allow).toBe(allow.join(', '));
        expectDeclared(method, template, response);
        checked += 1;
      }
      for (const method of allow) expect(item[method.toLowerCase()] ?? (method === 'HEAD' ? item.get : undefined), `${method} ${template}`).toBeDefined();
    }
    expect(checked).toBeGreaterThan(Object.keys(paths).length * 30);
  });

  it('finds an answer that differs from x-methods-not-allowed: another Allow, an undeclared status', async () => {
    const refusal = await app.inject({ method: 'PROPFIND', url: '/api/methods/' });
    expectDeclared('PROPFIND', '/api/methods/', refusal);
    expect(contract.check('PROPFIND', '/api/loans/', refusal)).toEqual([expect.objectContaining({ message: "Allow 'GET, HEAD' is not the declared 'GET, HEAD, POST'" })]);
    expect(contract.check('PROPFIND', '/healthz', { status: 409, headers: refusal.headers, body: refusal.body })).toEqual([expect.objectContaining({ message: 'status 409 is not documented' })]);
    expect(contract.check('PROPFIND', '/nowhere', refusal)).toEqual([expect.objectContaining({ message: 'path is not documented' })]);
  });

  it('answers 400 bad_request to malformed percent-encoding and 404 to a uid longer than any record\'s, declared, on every operation of a path with a uid', async () => {
    const cases = [
      { what: 'malformed percent-encoding', filler: '%E0%A4%A', status: 400, code: 'bad_request' },
      { what: 'a uid over 255 characters', filler: 'a'.repeat(300), status: 404, code: 'not_found' },
    ];
    let checked = 0;
    for (const template of Object.keys(paths)) {
      if (!template.includes('{')) continue;
      // Served or not: an operation of the path, or its x-methods-not-allowed.
      for (const method of ['get', 'post', 'put', 'delete'] as const) {
        for (const { what, filler, status, code } of cases) {
          const response = await app.inject({ method: method.toUpperCase() as 'GET', url: urlOf(template, filler), headers: { authorization: writer().authorization } });
          expect(response.statusCode, `${method} ${template}: ${what}`).toBe(status);
          expect(response.json()).toMatchObject({ code });
          expectDeclared(method, template, response);
          checked += 1;
        }
      }
    }
    expect(checked).toBeGreaterThanOrEqual(8 * 4 * 2);
  });

  it('sends, and declares, X-RateLimit-* and API-Version on every authenticated answer, not only on 429', async () => {
    const answers = [
      { template: '/api/methods/', url: '/api/methods/', status: 200 },
      { template: '/api/methods/{uid}/', url: '/api/methods/nope/', status: 404 },
      { template: '/api/methods/', url: '/api/methods/?order_by=nope', status: 422 },
    ];
    for (const { template, url, status } of answers) {
      const response = await app.inject({ method: 'GET', url, headers: { authorization: reader.authorization } });
      expect(response.statusCode, url).toBe(status);
      expect(response.headers['x-ratelimit-limit'], url).toBe('1000');
      expect(Number(response.headers['x-ratelimit-remaining'])).toBeLessThan(1000);
      expect(response.headers['api-version']).toBe(API_VERSION);
      expectDeclared('GET', template, response);
    }
  });

  it('declares Idempotent-Replayed on a replayed 409 refusal', async () => {
    const limit = await newLimit('10.00');
    const send = () => postEntry(app, 'drawdown', limit, { amount: '50.00' }, { authorization: writer().authorization, idempotencyKey: `replay-409-${limit}` });
    const first = await send();
    const replay = await send();
    expect([first.statusCode, replay.statusCode]).toEqual([409, 409]);
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expectDeclared('POST', '/api/limits/{uid}/drawdowns/', replay);
  });
});

describeEachStore('a failed-login block, as docs/api.md "Rate limits" says', (store) => {
  let app: FastifyInstance;
  let tenant: Tenant;
  beforeAll(async () => {
    app = await buildApp({ store: store(), rateLimit: { perMinute: 1000, authFailuresPerMinute: 3 } });
    tenant = await createTenant(store());
  });
  afterAll(async () => {
    await app.close();
  });

  it('answers the API 429 with the failed-login budget as X-RateLimit-Limit, and leaves health, readiness, the reference and 405s alone', async () => {
    const remoteAddress = '203.0.113.77';
    const wrong = `Basic ${Buffer.from(`${tenant.org.uid}:lak_0123456789abcdef_${'x'.repeat(43)}`).toString('base64')}`;
    for (let attempt = 0; attempt < 4; attempt += 1) {
      await app.inject({ method: 'GET', url: '/api/methods/', headers: { authorization: wrong }, remoteAddress });
    }
    const blocked = await app.inject({ method: 'GET', url: '/api/methods/', headers: { authorization: tenant.authorization }, remoteAddress });
    expect(blocked.statusCode).toBe(429);
    expect(blocked.headers['x-ratelimit-limit']).toBe('3');
    expect(blocked.headers['x-ratelimit-remaining']).toBe('0');
    expect(blocked.headers['retry-after']).toBe(blocked.headers['x-ratelimit-reset']);
    expectDeclared('GET', '/api/methods/', blocked);

    for (const [method, url] of [['GET', '/healthz'], ['GET', '/readyz'], ['GET', '/docs'], ['GET', '/api/openapi.json'], ['DELETE', '/api/methods/']] as const) {
      const response = await app.inject({ method, url, headers: { authorization: tenant.authorization }, remoteAddress });
      expect(response.statusCode, `${method} ${url}`).not.toBe(429);
    }
  });
});

describe('the document itself', () => {
  it('has one relative servers entry (the installation serving it, over whatever scheme it is reached), and no array schema without items', () => {
    expect(document.servers).toEqual([expect.objectContaining({ url: '/' })]);
    const bare: string[] = [];
    const walk = (value: unknown, at: string) => {
      if (typeof value !== 'object' || value === null) return;
      const object = value as JsonObject;
      if (object.type === 'array' && object.items === undefined) bare.push(at);
      for (const [key, child] of Object.entries(object)) walk(child, `${at}/${key}`);
    };
    walk(document, '');
    expect(bare).toEqual([]);
  });

  it('summarizes each retrieve operation with the right article ("Retrieve an entity")', () => {
    const summaries = Object.values(paths).flatMap((item) => (item.get?.operationId?.toString().startsWith('retrieve') ? [String(item.get.summary)] : []));
    expect(summaries).toContain('Retrieve an entity');
    expect(summaries).toContain('Retrieve a credit limit');
    expect(summaries.filter((summary) => / a [aeiou]/i.test(summary))).toEqual([]);
  });

  it('says which methods answer 405 truthfully (POST is served on the write paths)', () => {
    const description = String((document.info as JsonObject).description);
    expect(description).not.toMatch(/other than GET and HEAD answer 405/);
    expect(description).toMatch(/`POST` on the writes/);
  });
});
