import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { useApp } from '../helpers/app.js';
import { insertPaymentMethods, paymentMethod } from '../helpers/records.js';
import { describeEachStore } from '../helpers/stores.js';
import { createTenant, type Tenant } from '../helpers/tenants.js';
import { useWriter } from '../helpers/writes.js';

const ALLOWED = 'https://app.lender.example';
const OTHER = 'https://evil.example';
const EXPOSED = 'Link, X-Request-Id, X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, Retry-After, Idempotent-Replayed, API-Version';
const CORS_HEADERS = ['access-control-allow-origin', 'access-control-expose-headers', 'access-control-allow-methods', 'access-control-allow-headers', 'access-control-max-age'];

describe('CORS_ALLOWED_ORIGINS (config)', () => {
  it('is none by default, and reads comma-separated origins', () => {
    expect(loadConfig({}).corsOrigins).toEqual([]);
    expect(loadConfig({ CORS_ALLOWED_ORIGINS: 'https://app.lender.example, http://localhost:5173' }).corsOrigins).toEqual(['https://app.lender.example', 'http://localhost:5173']);
  });

  it.each(['*', 'app.lender.example', 'https://app.lender.example/', 'https://app.lender.example/path', 'HTTPS://App.Lender.example', 'https://app.lender.example:443', 'ftp://files.example', 'https://a,,b', `https://${'a'.repeat(63)}.${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(63)}.example`])(
    'refuses %s, naming CORS_ALLOWED_ORIGINS',
    (raw) => {
      expect(() => loadConfig({ CORS_ALLOWED_ORIGINS: raw })).toThrow(ConfigError);
      expect(() => loadConfig({ CORS_ALLOWED_ORIGINS: raw })).toThrow(/^CORS_ALLOWED_ORIGINS must/);
    },
  );
});

describeEachStore('CORS', (store) => {
  const app = useApp(store, { corsOrigins: [ALLOWED, 'http://localhost:5173'] });
  const plain = useApp(store);
  const { writer, newLimit } = useWriter(store);
  let tenant: Tenant;
  beforeAll(async () => {
    tenant = await createTenant(store());
    await insertPaymentMethods(store(), tenant.org.id, Array.from({ length: 11 }, (_, i) => paymentMethod({ uid: `pm_cors_${i}` })));
  });
  const get = (server: FastifyInstance, url: string, origin?: string, authorization = tenant.authorization) =>
    server.inject({ url, headers: { authorization, ...(origin ? { origin } : {}) } });
  const write = async (server: FastifyInstance, origin?: string) =>
    server.inject({
      method: 'POST',
      url: `/api/limits/${await newLimit()}/drawdowns/`,
      headers: { authorization: writer().authorization, 'content-type': 'application/json', 'idempotency-key': randomUUID(), ...(origin ? { origin } : {}) },
      payload: JSON.stringify({ amount: '1.00' }),
    });
  const preflight = (server: FastifyInstance, url: string, origin: string) =>
    server.inject({ method: 'OPTIONS', url, headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type, idempotency-key' } });

  it('lets an allowed origin read a list, a write and a problem, and the headers it needs', async () => {
    const answers = [await get(app(), '/api/methods/', ALLOWED), await write(app(), ALLOWED), await get(app(), '/api/methods/?colour=red', ALLOWED), await get(app(), '/api/methods/', ALLOWED, 'Basic bm9wZTpub3Bl')];
    expect(answers.map((answer) => answer.statusCode)).toEqual([200, 201, 422, 401]);
    for (const answer of answers) {
      expect(answer.headers['access-control-allow-origin']).toBe(ALLOWED);
      expect(answer.headers['access-control-expose-headers']).toBe(EXPOSED);
      expect(answer.headers.vary).toBe('Origin');
      expect(answer.headers['access-control-allow-credentials']).toBeUndefined();
    }
    expect(answers[0]!.headers.link).toBeDefined();
    for (const url of ['/healthz', '/readyz', '/api/openapi.json', '/docs']) {
      const answer = await app().inject({ url, headers: { origin: 'http://localhost:5173' } });
      expect(answer.statusCode, url).toBe(200);
      expect(answer.headers['access-control-allow-origin'], url).toBe('http://localhost:5173');
      expect(answer.headers.vary, url).toBe('Origin');
    }
  });

  it("answers an allowed origin's preflight 204 with the path's methods, the request headers and a cache time", async () => {
    for (const [url, methods] of [['/api/limits/lim_x/drawdowns/', 'POST'], ['/api/loans/', 'GET, HEAD, POST'], ['/api/methods/', 'GET, HEAD']] as const) {
      const answer = await preflight(app(), url, ALLOWED);
      expect(answer.statusCode, url).toBe(204);
      expect(answer.body).toBe('');
      expect(answer.headers).toMatchObject({
        'access-control-allow-origin': ALLOWED,
        'access-control-allow-methods': methods,
        'access-control-allow-headers': 'Authorization, Content-Type, Idempotency-Key, X-Request-Id',
        'access-control-max-age': '600',
        vary: 'Origin',
      });
    }
  });

  it('sends another origin no CORS header, and answers its preflight 405 as before; so does an installation with no origin allowed', async () => {
    for (const [server, origin] of [[app(), OTHER], [plain(), ALLOWED], [app(), 'https://app.lender.example.evil.example'], [app(), 'null']] as const) {
      const answers = [await get(server, '/api/methods/', origin), await write(server, origin), await get(server, '/api/methods/?colour=red', origin), await preflight(server, '/api/loans/', origin)];
      expect(answers.map((answer) => answer.statusCode)).toEqual([200, 201, 422, 405]);
      for (const answer of answers) for (const name of CORS_HEADERS) expect(answer.headers[name], `${origin} ${name}`).toBeUndefined();
      expect(answers[3]!.headers.allow).toBe('GET, HEAD, POST');
    }
    // Vary: Origin whenever an origin is allowed, so a shared cache never replays one origin's answer to another.
    expect((await get(app(), '/api/methods/', OTHER)).headers.vary).toBe('Origin');
    expect((await get(app(), '/api/methods/')).headers.vary).toBe('Origin');
    expect((await get(plain(), '/api/methods/', ALLOWED)).headers.vary).toBeUndefined();
  });

  it('answers an OPTIONS that is not a preflight, and a preflight to an unknown path, as before', async () => {
    const notPreflight = await app().inject({ method: 'OPTIONS', url: '/api/methods/', headers: { origin: ALLOWED } });
    expect(notPreflight.statusCode).toBe(405);
    expect(notPreflight.headers['access-control-allow-origin']).toBe(ALLOWED);
    expect((await preflight(app(), '/api/nothing-here/', ALLOWED)).statusCode).toBe(404);
  });
});
