import { expect, it } from 'vitest';
import { revokeApiKey } from '../../../src/auth/api-keys.js';
import { useApp } from '../../helpers/app.js';
import { describeEachStore } from '../../helpers/stores.js';
import { createTenant } from '../../helpers/tenants.js';
import { createLink, exchange, openSession } from './portal-helpers.js';

describeEachStore('portal sessions', (store) => {
  const app = useApp(store, { publicUrl: 'https://lending.example.com' });

  it('makes a one-time link under PUBLIC_URL, valid ten minutes, that opens a session of the key’s organization and scopes', async () => {
    const tenant = await createTenant(store(), 'Portal Lender', 'write');
    const link = await createLink(app(), tenant.authorization);
    expect(link.object).toBe('portal_session');
    expect(link.url.startsWith('https://lending.example.com/portal/#token=')).toBe(true);
    const linkMinutes = (Date.parse(link.expires_at) - Date.now()) / 60_000;
    expect(linkMinutes).toBeGreaterThan(8);
    expect(linkMinutes).toBeLessThanOrEqual(10);

    const response = await exchange(app(), link.token);
    expect(response.statusCode, response.body).toBe(201);
    const grant = response.json<{ object: string; session: string; expires_at: string; organization_id: string; scopes: string[] }>();
    expect(grant).toMatchObject({ object: 'portal_session_grant', organization_id: tenant.org.uid, scopes: ['read', 'write'] });
    expect(grant.session).toMatch(/^lps_[A-Za-z0-9_-]{43}$/);
    expect(Date.parse(grant.expires_at) - Date.now()).toBeLessThanOrEqual(60 * 60_000);
    expect(response.headers['cache-control']).toBe('no-store');
  });

  it('refuses a second exchange of the same link as already used', async () => {
    const tenant = await createTenant(store());
    const { token } = await createLink(app(), tenant.authorization);
    expect((await exchange(app(), token)).statusCode).toBe(201);
    const again = await exchange(app(), token);
    expect(again.statusCode).toBe(401);
    expect(again.headers['content-type']).toContain('application/problem+json');
    expect(again.json<{ detail: string }>().detail).toContain('already used');
    expect(again.body).not.toContain(token);
  });

  it('refuses an expired link, and an unknown one, saying which', async () => {
    const tenant = await createTenant(store());
    const { token } = await createLink(app(), tenant.authorization);
    await store().query(`UPDATE portal_sessions SET link_expires_at = now() - interval '1 second' WHERE org_id = $1`, [tenant.org.id]);
    const expired = await exchange(app(), token);
    expect(expired.statusCode).toBe(401);
    expect(expired.json<{ detail: string }>().detail).toContain('expired');
    const unknown = await exchange(app(), `lpt_${'A'.repeat(43)}`);
    expect(unknown.statusCode).toBe(401);
    expect(unknown.json<{ detail: string }>().detail).toContain('not valid');
  });

  it('lets exactly one of many concurrent exchanges of one link through', async () => {
    const tenant = await createTenant(store());
    const { token } = await createLink(app(), tenant.authorization);
    const answers = await Promise.all(Array.from({ length: 8 }, () => exchange(app(), token)));
    expect(answers.map((answer) => answer.statusCode).sort()).toEqual([201, 401, 401, 401, 401, 401, 401, 401]);
  });

  it('ends a link and a live session when their key is revoked', async () => {
    const tenant = await createTenant(store());
    const { bearer } = await openSession(app(), tenant.authorization);
    const unused = await createLink(app(), tenant.authorization);
    expect((await app().inject({ url: '/api/limits/', headers: { authorization: bearer } })).statusCode).toBe(200);
    await revokeApiKey(store(), tenant.keyId);
    const after = await app().inject({ url: '/api/limits/', headers: { authorization: bearer } });
    expect(after.statusCode).toBe(401);
    expect(after.headers['www-authenticate']).toContain('Basic');
    expect(after.json<{ detail: string }>().detail).toContain('portal session has ended');
    const refused = await exchange(app(), unused.token);
    expect(refused.statusCode).toBe(401);
    expect(refused.json<{ detail: string }>().detail).toContain('not valid');
  });

  it('gives a session exactly its key’s scopes: a read session cannot write, a webhooks session manages endpoints', async () => {
    const reader = await createTenant(store());
    const { bearer: readBearer } = await openSession(app(), reader.authorization);
    const write = await app().inject({
      method: 'POST',
      url: '/api/limits/cl_1/drawdowns/',
      headers: { authorization: readBearer, 'content-type': 'application/json', 'idempotency-key': 'portal-read-1' },
      payload: '{"amount":"1.00"}',
    });
    expect(write.statusCode).toBe(403);

    const hooks = await createTenant(store(), 'Hooks Lender', 'webhooks');
    const { bearer, grant } = await openSession(app(), hooks.authorization);
    expect(grant.scopes).toEqual(['read', 'webhooks']);
    const list = await app().inject({ url: '/api/webhook_endpoints/', headers: { authorization: bearer } });
    expect(list.statusCode, list.body).toBe(200);
  });

  it('keeps a session inside its organization', async () => {
    const a = await createTenant(store(), 'Lender A');
    const b = await createTenant(store(), 'Lender B');
    await store().query(
      `INSERT INTO entities (org_id, uid, name, country, created_at, updated_at) VALUES ($1, 'ent_only_b', 'B only', 'US', now(), now())`,
      [b.org.id],
    );
    const { bearer } = await openSession(app(), a.authorization);
    const own = await app().inject({ url: '/api/entities/', headers: { authorization: bearer } });
    expect(own.statusCode).toBe(200);
    expect(own.body).not.toContain('ent_only_b');
    expect((await app().inject({ url: '/api/entities/ent_only_b/', headers: { authorization: bearer } })).statusCode).toBe(404);
    expect((await app().inject({ url: '/api/entities/ent_only_b/', headers: { authorization: b.authorization } })).statusCode).toBe(200);
  });

  it('ends a session after its hour', async () => {
    const tenant = await createTenant(store());
    const { bearer } = await openSession(app(), tenant.authorization);
    await store().query(`UPDATE portal_sessions SET session_expires_at = now() - interval '1 second' WHERE org_id = $1`, [tenant.org.id]);
    expect((await app().inject({ url: '/api/limits/', headers: { authorization: bearer } })).statusCode).toBe(401);
  });

  it('takes {} as the body, and refuses a member or a body that is not JSON', async () => {
    const tenant = await createTenant(store());
    const post = (payload: string, contentType = 'application/json') =>
      app().inject({ method: 'POST', url: '/api/portal_sessions/', headers: { authorization: tenant.authorization, 'content-type': contentType }, payload });
    expect((await post('{}')).statusCode).toBe(201);
    const member = await post('{"scope":"write"}');
    expect(member.statusCode).toBe(422);
    expect(member.json<{ errors: { param: string }[] }>().errors).toContainEqual(expect.objectContaining({ param: 'scope' }));
    expect((await post('scope=write', 'application/x-www-form-urlencoded')).statusCode).toBe(415);
  });

  it('does not let a session make links (it would renew itself forever)', async () => {
    const tenant = await createTenant(store());
    const { bearer } = await openSession(app(), tenant.authorization);
    const response = await app().inject({ method: 'POST', url: '/api/portal_sessions/', headers: { authorization: bearer } });
    expect(response.statusCode).toBe(403);
  });
});
