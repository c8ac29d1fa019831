import { expect, it } from 'vitest';
import { buildApp } from '../helpers/app.js';
import { describeEachStore } from '../helpers/stores.js';
import { createTenant } from '../helpers/tenants.js';

describeEachStore('security headers', (store) => {
  it('marks authenticated responses no-store and every JSON response nosniff, unframeable and referrer-free', async () => {
    const app = await buildApp({ store: store() });
    const tenant = await createTenant(store());
    const responses = {
      list: await app.inject({ url: '/api/methods/', headers: { authorization: tenant.authorization } }),
      notFound: await app.inject({ url: '/api/limits/cl_x/', headers: { authorization: tenant.authorization } }),
      unauthorized: await app.inject({ url: '/api/limits/' }),
      health: await app.inject({ url: '/healthz' }),
      noRoute: await app.inject({ url: '/nowhere' }),
    };
    await app.close();

    for (const response of Object.values(responses)) {
      expect(response.headers['x-content-type-options']).toBe('nosniff');
      expect(response.headers['x-frame-options']).toBe('DENY');
      expect(response.headers['referrer-policy']).toBe('no-referrer');
      expect(response.headers['content-security-policy']).toBe("default-src 'none'; frame-ancestors 'none'");
    }
    for (const response of [responses.list, responses.notFound, responses.unauthorized]) {
      expect(response.headers['cache-control']).toBe('no-store');
    }
  });
});
