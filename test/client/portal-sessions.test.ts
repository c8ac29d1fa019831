import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, expect, expectTypeOf, it } from 'vitest';
import { buildApp } from '../helpers/app.js';
import { LendingClient, type PortalSession } from '../../packages/client/src/index.js';
import { describeEachStore } from '../helpers/stores.js';
import { createTenant } from '../helpers/tenants.js';
import { injectFetch } from '../helpers/inject-fetch.js';
import { exchange, tokenOfLink } from '../portal/api/portal-helpers.js';

const BASE_URL = 'http://lending.test:8080';

describeEachStore('LendingClient portalSessions.create', (store) => {
  let app: FastifyInstance;
  beforeAll(async () => {
    app = await buildApp({ store: store() });
  });
  afterAll(async () => {
    await app.close();
  });

  it('makes a link on the server the client talks to, which opens a session of the client’s key once', async () => {
    const tenant = await createTenant(store(), 'SDK portal lender', 'webhooks');
    const client = new LendingClient({ baseUrl: BASE_URL, organizationId: tenant.org.uid, apiKey: tenant.apiKey, fetch: injectFetch(app) });
    const link = await client.portalSessions.create();
    expectTypeOf(link).toEqualTypeOf<PortalSession>();
    expect(link.object).toBe('portal_session');
    expect(link.url.startsWith(`${BASE_URL}/portal/#token=`)).toBe(true);
    const token = tokenOfLink(link.url);
    const granted = await exchange(app, token);
    expect(granted.statusCode).toBe(201);
    expect(granted.json()).toMatchObject({ organization_id: tenant.org.uid, scopes: ['read', 'webhooks'] });
    expect((await exchange(app, token)).statusCode).toBe(401);
  });
});
