import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { MAX_SERVED_HOSTS_REMEMBERED } from '../../src/http/allowed-hosts.js';
import { json, useApp, type Page } from '../helpers/app.js';
import { rawRequest } from '../helpers/raw-http.js';
import { insertPaymentMethods, paymentMethod } from '../helpers/records.js';
import { spawnServer, type SpawnedServer } from '../helpers/spawn-server.js';
import { describeEachStore } from '../helpers/stores.js';
import { createTenant, type Tenant } from '../helpers/tenants.js';
import { ledgerState, postEntry, useWriter } from '../helpers/writes.js';

interface Problem {
  code: string;
  detail: string;
}

const NOT_SERVED = 'the Host header names a host this service does not serve; its operator lists the served ones in ALLOWED_HOSTS';
const MALFORMED = 'the Host header is not a valid host name (and port, 1–65535)';

describe('ALLOWED_HOSTS (config)', () => {
  it('defaults to the listen address, the loopback names and the host of PUBLIC_URL', () => {
    expect(loadConfig({}).allowedHosts).toEqual(['127.0.0.1', 'localhost', '[::1]']);
    expect(loadConfig({ HOST: '0.0.0.0', PUBLIC_URL: 'https://API.Lender.example/v1' }).allowedHosts).toEqual([
      '0.0.0.0',
      'localhost',
      '127.0.0.1',
      '[::1]',
      'api.lender.example',
    ]);
    expect(loadConfig({ HOST: '::' }).allowedHosts).toContain('[::]');
    expect(loadConfig({ HOST: 'node_1', PUBLIC_URL: 'https://api.lender.example' }).allowedHosts).toEqual(['localhost', '127.0.0.1', '[::1]', 'api.lender.example']);
  });

  it('reads names, .domain patterns, IP literals and *', () => {
    expect(loadConfig({ ALLOWED_HOSTS: 'api.example.com, .Lender.example., 10.0.0.5, ::1, [fd00::7]' }).allowedHosts).toEqual([
      'api.example.com',
      '.lender.example',
      '10.0.0.5',
      '[::1]',
      '[fd00::7]',
    ]);
    expect(loadConfig({ ALLOWED_HOSTS: '*' }).allowedHosts).toEqual(['*']);
  });

  it.each(['api.example.com:443', 'https://api.example.com', 'api.example.com/v1', 'a,,b', `${'a'.repeat(64)}.example`, '*.example.com', '.[::1]'])(
    'refuses %s, naming ALLOWED_HOSTS',
    (raw) => {
      expect(() => loadConfig({ ALLOWED_HOSTS: raw })).toThrow(ConfigError);
      expect(() => loadConfig({ ALLOWED_HOSTS: raw })).toThrow(/^ALLOWED_HOSTS must be comma-separated host names/);
    },
  );
});

describeEachStore('Host headers and ALLOWED_HOSTS', (store) => {
  const app = useApp(store, { allowedHosts: ['localhost', '127.0.0.1', '[::1]', '.lender.example'] });
  const anyHost = useApp(store, { allowedHosts: ['*'] });
  const proxied = useApp(store, { allowedHosts: ['localhost'], trustProxy: true });
  const { writer, newLimit } = useWriter(store);
  let tenant: Tenant;
  beforeAll(async () => {
    tenant = await createTenant(store());
    await insertPaymentMethods(store(), tenant.org.id, Array.from({ length: 11 }, (_, i) => paymentMethod({ uid: `pm_host_${i}` })));
  });
  const get = (server: FastifyInstance, url: string, host: string, headers: Record<string, string> = {}) =>
    server.inject({ url, headers: { authorization: tenant.authorization, host, ...headers } });

  it('refuses a list, a record and a write for a host not allowed, with a 400 naming the Host header and no link to it', async () => {
    for (const url of ['/api/methods/', '/api/methods/?cursor=', '/api/methods/pm_host_1/', '/api/limits/']) {
      const response = await get(app(), url, 'evil.example');
      expect(response.statusCode, url).toBe(400);
      expect(json<Problem>(response), url).toMatchObject({ code: 'bad_request', detail: NOT_SERVED });
      expect(response.body).not.toContain('evil.example');
      expect(response.headers.link).toBeUndefined();
    }
    const limit = await newLimit();
    const write = await app().inject({
      method: 'POST',
      url: `/api/limits/${limit}/drawdowns/`,
      headers: { authorization: writer().authorization, host: 'evil.example', 'content-type': 'application/json', 'idempotency-key': 'host-1' },
      payload: JSON.stringify({ amount: '1.00' }),
    });
    expect(write.statusCode).toBe(400);
    expect(json<Problem>(write).detail).toBe(NOT_SERVED);
    expect(await ledgerState(store(), writer().org.id, limit)).toEqual({ outstanding: '0.00', entries: 0 });
    expect((await postEntry(app(), 'drawdown', limit, { amount: '1.00' }, { authorization: writer().authorization })).statusCode).toBe(201);
  });

  it('serves the allowed names in any letter case, with any port and a trailing dot, and a .domain with its subdomains', async () => {
    const served = ['localhost', 'LOCALHOST:3000', 'localhost.:8080', '127.0.0.1:65535', '[::1]:3000', 'lender.example', 'api.lender.example', 'a.b.lender.example:443'];
    for (const host of served) {
      const response = await get(app(), '/api/methods/', host);
      expect(response.statusCode, host).toBe(200);
      expect(json<Page>(response).next, host).toBe(`http://${host}/api/methods/?page=2`);
    }
    for (const host of ['evillender.example', 'lender.example.evil', 'localhost.evil', '127.0.0.2', '[::2]']) {
      expect((await get(app(), '/api/methods/', host)).statusCode, host).toBe(400);
    }
  });

  it('refuses port 0, ports past 65535, labels over 63 characters and names over 253, whatever ALLOWED_HOSTS says', async () => {
    const label = (n: number) => 'a'.repeat(n);
    const malformed = ['127.0.0.1:0', 'localhost:00', 'localhost:65536', 'localhost:99999', `${label(64)}.example`, `${label(300)}`, `${Array(64).fill('abc').join('.')}`, 'evil.example/path?', 'localhost:', ''];
    for (const host of malformed.filter((h) => h !== '')) {
      for (const server of [app(), anyHost()]) {
        const response = await get(server, '/api/methods/', host);
        expect(response.statusCode, host).toBe(400);
        expect(json<Problem>(response).detail, host).toBe(MALFORMED);
      }
    }
    const longest = `${label(63)}.${label(63)}.${label(63)}.${label(61)}`;
    expect(longest).toHaveLength(253);
    expect((await get(anyHost(), '/api/methods/', `${longest}:1`)).statusCode).toBe(200);
  });

  it('judges every host alike after many served ones: more served names than the service remembers, then a refused one and a new served one', async () => {
    // No credentials: a served host goes on to authentication (401), a refused one stops at the host check (400).
    const ask = (host: string) => app().inject({ url: '/api/methods/', headers: { host } });
    for (let i = 0; i < MAX_SERVED_HOSTS_REMEMBERED + 20; i += 1) {
      expect((await ask(`n${i}.lender.example`)).statusCode).toBe(401);
    }
    expect((await ask('n1.lender.example')).statusCode).toBe(401);
    expect(json<Problem>(await ask('evil.example')).detail).toBe(NOT_SERVED);
    expect(json<Problem>(await ask('n1.lender.example:0')).detail).toBe(MALFORMED);
    expect((await ask('fresh.lender.example')).statusCode).toBe(401);
    expect((await ask('evil.example')).statusCode).toBe(400);
  });

  it('checks X-Forwarded-Host from a trusted proxy, naming that header', async () => {
    const refused = await get(proxied(), '/api/methods/', 'localhost', { 'x-forwarded-host': 'evil.example', 'x-forwarded-proto': 'https' });
    expect(refused.statusCode).toBe(400);
    expect(json<Problem>(refused).detail).toBe(NOT_SERVED.replace('Host header', 'X-Forwarded-Host header'));
    const served = await get(proxied(), '/api/methods/', 'evil.example', { 'x-forwarded-host': 'localhost', 'x-forwarded-proto': 'https' });
    expect(json<Page>(served).next).toBe('https://localhost/api/methods/?page=2');
  });

  it('answers health probes, the API reference and 405s whatever the Host', async () => {
    for (const url of ['/healthz', '/readyz', '/api/openapi.json', '/docs']) {
      const response = await app().inject({ url, headers: { host: 'evil.example' } });
      expect(response.statusCode, url).toBeLessThan(400);
    }
    const notAllowed = await app().inject({ method: 'DELETE', url: '/api/methods/', headers: { host: 'evil.example' } });
    expect(notAllowed.statusCode).toBe(405);
  });
});

describe('lending-api serve with its default ALLOWED_HOSTS', () => {
  let server: SpawnedServer;
  beforeAll(async () => {
    server = await spawnServer([], { DATABASE_URL: 'pglite://memory' });
  });
  afterAll(() => {
    server?.child.kill();
  });

  it('refuses another host before anything else, and serves its own address and localhost', async () => {
    const port = Number(new URL(server.url).port);
    const ask = (path: string, host: string) => rawRequest(port, `GET ${path} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
    const evil = await ask('/api/methods/', 'evil.example');
    expect(evil.status).toBe(400);
    expect(JSON.parse(evil.body)).toMatchObject({ code: 'bad_request', detail: NOT_SERVED });
    // Allowed: on to authentication.
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`]) expect((await ask('/api/methods/', host)).status, host).toBe(401);
    expect((await ask('/healthz', 'evil.example')).status).toBe(200);
  });
});
