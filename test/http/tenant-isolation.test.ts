import { beforeAll, expect, it } from 'vitest';
import { RESOURCES } from '../../src/resources/index.js';
import { json, useApp, type Page } from '../helpers/app.js';
import { insertRecords, keyFieldOf, listPathOf, PARENT_UID, sampleRecords } from '../helpers/fixtures/index.js';
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

describeEachStore('tenant isolation in every collection', (store) => {
  const app = useApp(store);

  for (const resource of RESOURCES) {
    const listPath = listPathOf(resource);
    const key = keyFieldOf(resource);
    it(`${listPath} shows each organization only its own records, even under the same ${resource.parent ? 'parent uid and ids' : 'uids'}`, async () => {
      const alpha = await createTenant(store(), 'Alpha');
      const beta = await createTenant(store(), 'Beta');
      const shared = sampleRecords(resource, 3, 1, 'shared');
      await insertRecords(store(), resource, alpha.org.id, shared.slice(0, 1));
      await insertRecords(store(), resource, beta.org.id, [...shared, ...sampleRecords(resource, 2, 2, 'beta_only')]);

      const alphaPage = json<Page>(await app().inject({ url: listPath, headers: { authorization: alpha.authorization } }));
      expect(alphaPage.count).toBe(1);
      expect(alphaPage.items.map((item) => item[key])).toEqual(['shared_0']);
      const betaPage = json<Page>(await app().inject({ url: listPath, headers: { authorization: beta.authorization } }));
      expect(betaPage.count).toBe(5);

      if (resource.parent) {
        // The parent record of another organization is not found: a 404 naming it, never its records.
        const gamma = await createTenant(store(), 'Gamma');
        const response = await app().inject({ url: listPath, headers: { authorization: gamma.authorization } });
        expect(response.statusCode).toBe(404);
        expect(json(response)).toMatchObject({ code: 'not_found', detail: `no ${resource.parent.resource.name} with uid '${PARENT_UID}'` });
        expect(response.body).not.toContain('shared_');
        return;
      }
      for (const uid of ['shared_1', 'beta_only_0']) {
        const response = await app().inject({ url: `/api/${resource.path}/${uid}/`, headers: { authorization: alpha.authorization } });
        expect(response.statusCode).toBe(404);
        expect(json(response)).toMatchObject({ code: 'not_found' });
      }
      const own = await app().inject({ url: `/api/${resource.path}/shared_0/`, headers: { authorization: alpha.authorization } });
      expect(own.statusCode).toBe(200);
    });
  }
});
