import { beforeAll, expect, it } from 'vitest';
import { createApiKey, revokeApiKey } from '../../src/auth/api-keys.js';
import { json, useApp } from '../helpers/app.js';
import { insertPaymentMethods, paymentMethod } from '../helpers/records.js';
import { describeEachStore } from '../helpers/stores.js';
import { basicAuthorization, createExpiredApiKey, createTenant, type Tenant } from '../helpers/tenants.js';

describeEachStore('HTTP Basic authentication', (store) => {
  const app = useApp(store);
  let tenant: Tenant;
  let other: Tenant;

  beforeAll(async () => {
    tenant = await createTenant(store());
    other = await createTenant(store());
    await insertPaymentMethods(store(), tenant.org.id, [paymentMethod({ uid: 'pm_auth' })]);
  });

  async function expectUnauthorized(headers: Record<string, string>, url = '/api/methods/') {
    const response = await app().inject({ url, headers });
    expect(response.statusCode).toBe(401);
    expect(response.headers['www-authenticate']).toBe('Basic realm="lending-api", charset="UTF-8"');
    expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
    const problem = json(response);
    expect(problem).toMatchObject({ status: 401, code: 'unauthorized', title: 'Authentication required' });
    return problem;
  }

  it('accepts the organization ID and an active key', async () => {
    const response = await app().inject({ url: '/api/methods/', headers: { authorization: tenant.authorization } });
    expect(response.statusCode).toBe(200);
    expect(json(response).count).toBe(1);
  });

  it('answers every failure with the same 401 body, never saying which half was wrong', async () => {
    const someoneElsesKey = basicAuthorization(tenant.org.uid, other.apiKey);
    const wrongSecret = basicAuthorization(tenant.org.uid, tenant.apiKey.slice(0, -4) + 'AAAA');
    const unknownKeyId = basicAuthorization(tenant.org.uid, tenant.apiKey.replace(/^lak_[0-9a-f]{4}/, 'lak_ffff'));
    const unknownOrg = basicAuthorization('org_nobody', tenant.apiKey);
    const cases: Record<string, Record<string, string>> = {
      missing: {},
      'not Basic': { authorization: `Bearer ${tenant.apiKey}` },
      'bad base64': { authorization: 'Basic !!!not-base64!!!' },
      'no colon': { authorization: `Basic ${Buffer.from(tenant.org.uid).toString('base64')}` },
      'empty user': { authorization: basicAuthorization('', tenant.apiKey) },
      'empty key': { authorization: basicAuthorization(tenant.org.uid, '') },
      'malformed key': { authorization: basicAuthorization(tenant.org.uid, 'not-a-key') },
      'unknown organization': { authorization: unknownOrg },
      'unknown key id': { authorization: unknownKeyId },
      'wrong secret': { authorization: wrongSecret },
      "another organization's key": { authorization: someoneElsesKey },
    };
    const details = new Set<string>();
    for (const [name, headers] of Object.entries(cases)) {
      const problem = await expectUnauthorized(headers);
      expect(problem, name).not.toHaveProperty('errors');
      details.add(String(problem.detail));
    }
    expect(details.size).toBe(1);
  });

  it('rejects a revoked key at once while another key of the organization keeps working', async () => {
    const rotated = await createApiKey(store(), tenant.org.uid);
    const spare = await createApiKey(store(), tenant.org.uid);
    const rotatedAuth = basicAuthorization(tenant.org.uid, rotated.key);
    expect((await app().inject({ url: '/api/methods/', headers: { authorization: rotatedAuth } })).statusCode).toBe(200);
    await revokeApiKey(store(), rotated.id);
    await expectUnauthorized({ authorization: rotatedAuth });
    const spareAuth = basicAuthorization(tenant.org.uid, spare.key);
    expect((await app().inject({ url: '/api/methods/', headers: { authorization: spareAuth } })).statusCode).toBe(200);
  });

  it('rejects an expired key and accepts one that expires later', async () => {
    const expired = await createExpiredApiKey(store(), tenant.org.uid);
    await expectUnauthorized({ authorization: basicAuthorization(tenant.org.uid, expired.key) });
    const later = await createApiKey(store(), tenant.org.uid, '2999-01-01T00:00:00.000000Z');
    const response = await app().inject({ url: '/api/methods/', headers: { authorization: basicAuthorization(tenant.org.uid, later.key) } });
    expect(response.statusCode).toBe(200);
  });

  it('guards retrieve as well as list, on both collections', async () => {
    for (const url of ['/api/methods/pm_auth/', '/api/limits/', '/api/limits/cl_1/']) await expectUnauthorized({}, url);
  });

  it('stores only a hash of each key', async () => {
    const rows = await store().query<{ row: string }>('SELECT k::text AS row FROM api_keys k');
    const dump = rows.map((r) => r.row).join('\n');
    expect(dump).toContain(tenant.keyId);
    expect(dump).not.toContain(tenant.apiKey);
    expect(dump).not.toContain(tenant.apiKey.slice(-43));
  });
});
