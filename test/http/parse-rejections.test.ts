import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../helpers/app.js';
import type { Store } from '../../src/store/store.js';
import { openPgliteTestStore } from '../helpers/stores.js';
import { expectProblemWithIdAndHeaders } from '../helpers/answer-checks.js';
import { rawRequest } from '../helpers/raw-http.js';
import { createTenant, type Tenant } from '../helpers/tenants.js';

// Over a real socket: these requests never get as far as Fastify's inject.
describe('requests rejected while parsing, and ambiguous credentials', () => {
  let store: Store;
  let app: FastifyInstance;
  let port: number;
  let tenant: Tenant;
  beforeAll(async () => {
    store = await openPgliteTestStore();
    tenant = await createTenant(store);
    app = await buildApp({ store });
    await app.listen({ port: 0, host: '127.0.0.1' });
    port = (app.server.address() as { port: number }).port;
  });
  afterAll(async () => {
    await app?.close();
    await store?.close();
  });

  it.each([
    ['an unknown method', 'FOO /api/methods/ HTTP/1.1\r\nHost: x\r\n\r\n'],
    ['a raw space in the URL', 'GET /api/methods/a b/ HTTP/1.1\r\nHost: x\r\n\r\n'],
    ['a URL over the header limit', `GET /api/methods/?entity=${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`],
    ['headers over the limit', `GET /api/methods/ HTTP/1.1\r\nHost: x\r\nX-Big: ${'b'.repeat(20_000)}\r\n\r\n`],
    ['a header line without a colon', 'GET /healthz HTTP/1.1\r\nHost: x\r\nnonsense\r\n\r\n'],
  ])('answers %s with 400 problem+json, a real request id and the security headers', async (_name, request) => {
    const response = await rawRequest(port, request);
    expectProblemWithIdAndHeaders(response, 400);
    // Two rejections never share an id.
    expect((await rawRequest(port, request)).headers['x-request-id']).not.toBe(response.headers['x-request-id']);
  });

  it('refuses two Authorization headers with 400 problem+json, even when the first is valid', async () => {
    const both = `GET /api/methods/ HTTP/1.1\r\nHost: x\r\nAuthorization: ${tenant.authorization}\r\nAuthorization: Basic b3RoZXI6a2V5\r\nConnection: close\r\n\r\n`;
    const response = await rawRequest(port, both);
    expectProblemWithIdAndHeaders(response, 400);
    expect(JSON.parse(response.body)).toMatchObject({ code: 'bad_request' });
    expect(response.body).toContain('one Authorization header');

    const one = await rawRequest(port, `GET /api/methods/ HTTP/1.1\r\nHost: x\r\nAuthorization: ${tenant.authorization}\r\nConnection: close\r\n\r\n`);
    expect(one.status).toBe(200);
  });

  it('answers an HTTP/1.1 request without a Host with 400 problem+json (an HTTP/1.0 one is served)', async () => {
    const response = await rawRequest(port, `GET /api/methods/ HTTP/1.1\r\nAuthorization: ${tenant.authorization}\r\nConnection: close\r\n\r\n`);
    expectProblemWithIdAndHeaders(response, 400);
    expect(JSON.parse(response.body)).toMatchObject({ code: 'bad_request', detail: 'send a Host header: HTTP/1.1 requires one' });
    expect((await rawRequest(port, `GET /healthz HTTP/1.0\r\n\r\n`)).status).toBe(200);
  });

  it('answers CONNECT with 405 problem+json instead of dropping the connection', async () => {
    const response = await rawRequest(port, 'CONNECT 127.0.0.1:5432 HTTP/1.1\r\nHost: 127.0.0.1:5432\r\n\r\n');
    expectProblemWithIdAndHeaders(response, 405);
    expect(response.headers.allow).toBe('GET, HEAD');
    expect(JSON.parse(response.body)).toMatchObject({ code: 'method_not_allowed' });
  });

  it('answers an Expect other than 100-continue with 417 problem+json', async () => {
    const response = await rawRequest(port, 'GET /healthz HTTP/1.1\r\nHost: x\r\nExpect: 200-ok\r\nConnection: close\r\n\r\n');
    expectProblemWithIdAndHeaders(response, 417);
    expect(JSON.parse(response.body)).toMatchObject({ code: 'expectation_failed', detail: expect.stringContaining("not '200-ok'") });
  });

  it.each([
    ['Host', `Host: a\r\nhost: b`],
    ['Idempotency-Key', `Host: x\r\nIdempotency-Key: k1\r\nidempotency-key: k2`],
  ])('refuses two %s headers with 400 problem+json naming it (Node would keep one, a proxy may act on the other)', async (header, headers) => {
    const response = await rawRequest(port, `GET /api/methods/ HTTP/1.1\r\n${headers}\r\nAuthorization: ${tenant.authorization}\r\nConnection: close\r\n\r\n`);
    expectProblemWithIdAndHeaders(response, 400);
    expect(JSON.parse(response.body)).toMatchObject({ code: 'bad_request', detail: `send one ${header} header; this request has 2` });
  });
});
