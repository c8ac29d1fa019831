import { describe, expect, it } from 'vitest';
import { buildApp } from './helpers/app.js';
import { createLogger, scrubSecrets } from '../src/logger.js';
import { logBuffer } from './helpers/log-buffer.js';
import { describeEachStore } from './helpers/stores.js';
import { basicAuthorization, createTenant } from './helpers/tenants.js';
import { unreachableStore } from './helpers/unreachable-store.js';

describeEachStore('structured logs', (store) => {
  it('writes one JSON access line per request with request id, organization, route, status and duration', async () => {
    const log = logBuffer();
    const app = await buildApp({ store: store(), loggerInstance: createLogger('info', log.stream) });
    const tenant = await createTenant(store());
    await app.inject({ url: '/api/methods/?currency=usd', headers: { authorization: tenant.authorization, 'x-request-id': 'req-log-1' } });
    await app.inject({ url: '/api/limits/cl_missing/', headers: { authorization: tenant.authorization, 'x-request-id': 'req-log-2' } });
    await app.close();

    const access = log.lines().filter((line) => line.msg === 'request');
    expect(access).toHaveLength(2);
    expect(access[0]).toMatchObject({
      request_id: 'req-log-1',
      org: tenant.org.uid,
      method: 'GET',
      route: '/api/methods/',
      path: '/api/methods/',
      status: 200,
    });
    expect(typeof access[0]?.duration_ms).toBe('number');
    expect(access[1]).toMatchObject({ request_id: 'req-log-2', route: '/api/limits/:uid/', status: 404 });
    // One request_id per line, whichever logger wrote it (a JSON object with a key twice is ambiguous to log tools).
    const raw = log.text().split('\n').filter((line) => line.includes('"msg":"request"'));
    for (const line of raw) expect(line.match(/"request_id"/g)).toHaveLength(1);
  });

  it('never logs the Authorization header, the API key or an account number, whatever the request carries', async () => {
    const log = logBuffer();
    const logger = createLogger('trace', log.stream);
    const app = await buildApp({ store: store(), loggerInstance: logger });
    const tenant = await createTenant(store());
    const wrongKey = `${tenant.apiKey.slice(0, -4)}AAAA`;
    const accountNumber = '000123456789';

    await app.inject({ url: '/api/methods/', headers: { authorization: tenant.authorization } });
    await app.inject({ url: '/api/methods/', headers: { authorization: basicAuthorization(tenant.org.uid, wrongKey) } });
    await app.inject({ url: `/api/methods/?key=${tenant.apiKey}&account_number=${accountNumber}`, headers: { authorization: tenant.authorization } });
    await app.inject({ url: `/api/${tenant.apiKey}/`, headers: { authorization: tenant.authorization } });
    await app.inject({ method: 'POST', url: '/api/methods/', headers: { authorization: tenant.authorization }, payload: { account_number: accountNumber } });
    // Whatever code logs credentials by mistake, in an object or a message, is redacted too.
    logger.info({ authorization: tenant.authorization, req: { headers: { authorization: tenant.authorization } } }, 'debugging');
    logger.warn({ apiKey: tenant.apiKey, record: { account_number: accountNumber } }, `key was ${tenant.apiKey}`);
    logger.error(`header was ${tenant.authorization}`);
    await app.close();

    const text = log.text();
    expect(text).toContain('"msg":"request"');
    const base64Credentials = tenant.authorization.slice('Basic '.length);
    for (const secret of [tenant.authorization, base64Credentials, tenant.apiKey, wrongKey, tenant.apiKey.slice('lak_0123456789abcdef_'.length), accountNumber]) {
      expect(secret.length).toBeGreaterThan(8);
      expect(text).not.toContain(secret);
    }
    expect(text).toContain('[redacted]');
  });
});

describe('the access line of a failed request', () => {
  it('writes a failed request\'s access line through the redacting logger, with its error', async () => {
    const log = logBuffer();
    const unreachable = unreachableStore();
    const app = await buildApp({ store: unreachable, loggerInstance: createLogger('info', log.stream) });
    await app.inject({ url: '/readyz', headers: { 'x-request-id': 'req-log-3' } });
    await app.close();
    await unreachable.close();
    const access = log.lines().filter((line) => line.msg === 'request');
    expect(access).toHaveLength(1);
    expect(access[0]).toMatchObject({ request_id: 'req-log-3', route: '/readyz', status: 503, level: 50 });
    expect(log.text().match(/"request_id"/g)?.length).toBe(log.lines().filter((line) => 'request_id' in line).length);
  });

});

describe('scrubSecrets', () => {
  it('replaces API keys and Basic or Bearer credentials inside text', () => {
    const key = 'lak_0123456789abcdef_ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopq';
    expect(scrubSecrets(`a ${key} b`)).toBe('a [redacted] b');
    expect(scrubSecrets('Authorization: Basic b3JnOmtleQ==')).toBe('Authorization: Basic [redacted]');
    expect(scrubSecrets('nothing secret here')).toBe('nothing secret here');
  });
});
