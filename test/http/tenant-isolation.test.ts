import { beforeAll, expect, it } from 'vitest';
import { json, useApp, type Page } from '../helpers/app.js';
import { creditLimit, insertCreditLimits, insertPaymentMethods, paymentMethod } from '../helpers/records.js';
import { describeEachStore } from '../helpers/stores.js';
import { createTenant, type Tenant } from '../helpers/tenants.js';

describeEachStore('tenant isolation', (store) => {
  const app = useApp(store);
  let alpha: Tenant;
  let beta: Tenant;

  beforeAll(async () => {
    alpha = await createTenant(store(), 'Alpha');
    beta = await createTenant(store(), 'Beta');
    // Both organizations use the same uids and entity: only the organization tells them apart.
    await insertPaymentMethods(store(), alpha.org.id, [paymentMethod({ uid: 'pm_shared', entity: 'ent_shared', last_2: '11' })]);
    await insertPaymentMethods(store(), beta.org.id, [paymentMethod({ uid: 'pm_shared', entity: 'ent_shared', last_2: '22' }), paymentMethod({ uid: 'pm_beta_only', entity: 'ent_shared' })]);
    await insertCreditLimits(store(), beta.org.id, [creditLimit({ uid: 'cl_beta_only', entity: 'ent_shared' })]);
  });

  it("lists only the caller's records, even with the other's entity", async () => {
    const page = json<Page>(await app().inject({ url: '/api/methods/?entity=ent_shared', headers: { authorization: alpha.authorization } }));
    expect(page.count).toBe(1);
    expect(page.items).toEqual([expect.objectContaining({ uid: 'pm_shared', last_2: '11' })]);
    const limits = json<Page>(await app().inject({ url: '/api/limits/', headers: { authorization: alpha.authorization } }));
    expect(limits).toEqual({ count: 0, next: null, previous: null, items: [] });
  });

  it("answers another organization's record with 404, never 403 and never data", async () => {
    for (const url of ['/api/methods/pm_beta_only/', '/api/limits/cl_beta_only/']) {
      const response = await app().inject({ url, headers: { authorization: alpha.authorization } });
      expect(response.statusCode).toBe(404);
      expect(response.body).not.toContain('ent_shared');
      expect(json(response)).toMatchObject({ code: 'not_found' });
    }
    const own = json(await app().inject({ url: '/api/methods/pm_shared/', headers: { authorization: beta.authorization } }));
    expect(own.last_2).toBe('22');
  });
});
