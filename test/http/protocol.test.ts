import { METHODS } from 'node:http';
import type { RouteOptions } from 'fastify';
import { beforeAll, expect, it } from 'vitest';
import { answerOf, expectProblemWithIdAndHeaders } from '../helpers/answer-checks.js';
import { portalCsp } from '../../src/http/security-headers.js';
import { json, useApp, type Page } from '../helpers/app.js';
import { creditLimit, insertCreditLimits, insertPaymentMethods, paymentMethod } from '../helpers/records.js';
import { describeEachStore } from '../helpers/stores.js';
import { createTenant, type Tenant } from '../helpers/tenants.js';

describeEachStore('HTTP protocol details', (store) => {
  const app = useApp(store);
  let tenant: Tenant;
  beforeAll(async () => {
    tenant = await createTenant(store());
    await insertPaymentMethods(store(), tenant.org.id, Array.from({ length: 12 }, (_, i) => paymentMethod({ uid: `pm_p${i}` })));
    await insertCreditLimits(store(), tenant.org.id, [
      creditLimit({ uid: 'cl_exact', capacity: '9999999999999.99', outstanding: '1234567890123.45', rate: '0.00050000' }),
    ]);
  });

  it.each(['POST', 'PUT', 'PATCH', 'DELETE'] as const)('answers %s with 405 and an Allow header, on collections and records', async (method) => {
    for (const url of ['/api/methods/', '/api/methods', '/api/limits/', '/api/limits/cl_exact/', '/api/methods/pm_p1']) {
      const response = await app().inject({ method, url, headers: { authorization: tenant.authorization } });
      expect(response.statusCode).toBe(405);
      expect(response.headers.allow).toBe('GET, HEAD');
      expect(json(response)).toMatchObject({ code: 'method_not_allowed', status: 405 });
    }
  });

  it('answers HEAD like GET without a body', async () => {
    const response = await app().inject({ method: 'HEAD', url: '/api/methods/', headers: { authorization: tenant.authorization } });
    expect(response.statusCode).toBe(200);
    expect(response.body).toBe('');
    expect(response.headers.link).toContain('rel="next"');
  });

  it('answers an unknown path with a problem+json 404', async () => {
    const response = await app().inject({ url: '/api/leases/', headers: { authorization: tenant.authorization } });
    expect(response.statusCode).toBe(404);
    expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(json(response)).toMatchObject({ code: 'not_found', type: 'https://lending-api.dev/problems/not-found' });
  });

  it('echoes a sane X-Request-Id and replaces anything else', async () => {
    const echoed = await app().inject({ url: '/healthz', headers: { 'x-request-id': 'abc-123.DEF:9' } });
    expect(echoed.headers['x-request-id']).toBe('abc-123.DEF:9');
    const replaced = await app().inject({ url: '/api/methods/?page=0', headers: { 'x-request-id': 'bad id\twith<script>', authorization: tenant.authorization } });
    expect(replaced.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    expect(json(replaced).request_id).toBe(replaced.headers['x-request-id']);
    const generated = await app().inject({ url: '/healthz' });
    expect(generated.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('answers the probes without authentication', async () => {
    const health = await app().inject({ url: '/healthz' });
    expect(health.statusCode).toBe(200);
    expect(json(health)).toEqual({ status: 'ok' });
    const ready = await app().inject({ url: '/readyz' });
    expect(ready.statusCode).toBe(200);
    expect(json(ready)).toEqual({
      status: 'ready',
      database: 'reachable',
      role: 'primary',
      serves_limits: true,
      lag_bytes: null,
      lag_seconds: null,
      wal_receiver: null,
    });
  });

  it('writes amounts as exact JSON numbers and balance as capacity − outstanding', async () => {
    const response = await app().inject({ url: '/api/limits/cl_exact/', headers: { authorization: tenant.authorization } });
    expect(response.body).toContain('"capacity":9999999999999.99');
    expect(response.body).toContain('"outstanding":1234567890123.45');
    expect(response.body).toContain('"balance":8765432109876.54');
    expect(response.body).toContain('"rate":0.0005');
  });

  it('marks authenticated responses no-store and nosniff', async () => {
    const response = await app().inject({ url: '/api/methods/', headers: { authorization: tenant.authorization } });
    expect(response.headers['cache-control']).toBe('no-store');
    expect(response.headers['x-content-type-options']).toBe('nosniff');
  });

  it('rejects a Host header that could inject into links, or names no port there is', async () => {
    for (const host of ['evil.example/path?', 'api.example:99999', 'api.example:65536']) {
      const response = await app().inject({ url: '/api/methods/', headers: { authorization: tenant.authorization, host } });
      expect(response.statusCode, host).toBe(400);
      expect(json(response), host).toMatchObject({ code: 'bad_request', detail: 'the Host header is not a valid host name (and port, 1–65535)' });
    }
    const highest = await app().inject({ url: '/api/methods/', headers: { authorization: tenant.authorization, host: 'api.example:65535' } });
    expect(highest.statusCode).toBe(200);
    expect(highest.headers.link).toContain('<http://api.example:65535/api/methods/');
  });
});

describeEachStore('405 with Allow on every route the app registers', (store) => {
  const routes: RouteOptions[] = [];
  const app = useApp(store, { onRoute: (route) => void routes.push(route) });

  /** A concrete URL for a route pattern: parameters and wildcards filled in. */
  const concrete = (url: string) => url.replace(/:\w+/g, 'x1').replace(/\*/g, 'index.html');

  it('answers every method a route does not serve with 405, an Allow header listing what it serves, as problem+json', async () => {
    // Only the app's own routes, not the 405s the mechanism adds.
    const served = new Map<string, Set<string>>();
    for (const route of routes) {
      if (route.config?.answersMethodNotAllowed) continue;
      const methods = [route.method].flat();
      const url = concrete(route.url);
      served.set(url, new Set([...(served.get(url) ?? []), ...methods, ...(methods.includes('GET') ? ['HEAD'] : [])]));
    }
    // What the issue reported, and the SPEC's paths, must be among them.
    for (const url of ['/healthz', '/readyz', '/api/openapi.json', '/docs', '/api/methods/', '/api/limits/', '/api/methods/x1/', '/api/limits/x1/', '/api/limits/x1/drawdowns/', '/api/limits/x1/repayments/']) {
      expect([...served.keys()]).toContain(url);
    }
    const routable = METHODS.filter((method) => method !== 'CONNECT');
    expect(routable).toEqual(expect.arrayContaining(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'TRACE', 'PROPFIND', 'SEARCH', 'LOCK']));
    for (const [url, methods] of served) {
      const allow = routable.filter((method) => methods.has(method)).join(', ');
      for (const method of routable.filter((other) => !methods.has(other))) {
        const response = await app().inject({ method: method as 'POST', url, payload: method === 'POST' ? '{}' : undefined });
        expect(response.statusCode, `${method} ${url}`).toBe(405);
        expect(response.headers.allow, `${method} ${url}`).toBe(allow);
        // A HEAD answer has no body to check.
        if (method === 'HEAD') continue;
        // The portal's pages answer every refusal with the portal's own policy (docs/portal.md), the API's problem otherwise.
        if (url.startsWith('/portal')) expect(response.headers['content-security-policy'], `${method} ${url}`).toBe(portalCsp([]));
        else expectProblemWithIdAndHeaders(answerOf(response), 405);
        expect(json(response)).toMatchObject({ code: 'method_not_allowed' });
      }
    }
  });
});

describeEachStore('link base URL', (store) => {
  let tenant: Tenant;
  beforeAll(async () => {
    tenant = await createTenant(store());
    await insertPaymentMethods(store(), tenant.org.id, Array.from({ length: 11 }, (_, i) => paymentMethod({ uid: `pm_l${i}` })));
  });

  const forwarded = { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'api.lender.example' };

  const direct = useApp(store);
  it('ignores X-Forwarded-* unless a proxy is trusted', async () => {
    const page = json<Page>(await direct().inject({ url: '/api/methods/', headers: { authorization: tenant.authorization, host: 'internal:3000', ...forwarded } }));
    expect(page.next).toBe('http://internal:3000/api/methods/?page=2');
  });

  const proxied = useApp(store, { trustProxy: true });
  it('honours X-Forwarded-Proto and -Host behind a trusted proxy', async () => {
    const page = json<Page>(await proxied().inject({ url: '/api/methods/', headers: { authorization: tenant.authorization, ...forwarded } }));
    expect(page.next).toBe('https://api.lender.example/api/methods/?page=2');
  });

  const configured = useApp(store, { publicUrl: 'https://lending.example.com/v1' });
  it('uses a configured public URL, path prefix included', async () => {
    const page = json<Page>(await configured().inject({ url: '/api/methods/', headers: { authorization: tenant.authorization, ...forwarded } }));
    expect(page.next).toBe('https://lending.example.com/v1/api/methods/?page=2');
  });
});
