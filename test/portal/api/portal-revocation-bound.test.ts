import { expect, it } from 'vitest';
import { revokeApiKey } from '../../../src/auth/api-keys.js';
import { useApp } from '../../helpers/app.js';
import { describeEachStore } from '../../helpers/stores.js';
import { createTenant } from '../../helpers/tenants.js';
import { openSession } from './portal-helpers.js';

const TTL_MS = 60_000;

describeEachStore('a revoked key’s portal session, through the auth cache', (store) => {
  let clock = Date.now();
  const app = useApp(store, { authCache: { ttlMs: TTL_MS, now: () => clock } });

  it('stops working within AUTH_CACHE_TTL_MS, exactly as its key does', async () => {
    const tenant = await createTenant(store());
    const { bearer } = await openSession(app(), tenant.authorization);
    const status = async (authorization: string) => (await app().inject({ url: '/api/limits/', headers: { authorization } })).statusCode;
    expect(await status(bearer)).toBe(200);
    expect(await status(tenant.authorization)).toBe(200);
    await revokeApiKey(store(), tenant.keyId);
    // Within the bound both may still be answered from the cache; past it, neither is.
    clock += TTL_MS;
    expect(await status(bearer)).toBe(401);
    expect(await status(tenant.authorization)).toBe(401);
  });

  it('never trusts a cached session past its own end, even within the TTL', async () => {
    clock = Date.now();
    const tenant = await createTenant(store());
    const { bearer } = await openSession(app(), tenant.authorization);
    await store().query(`UPDATE portal_sessions SET session_expires_at = now() + interval '20 seconds' WHERE org_id = $1`, [tenant.org.id]);
    expect((await app().inject({ url: '/api/limits/', headers: { authorization: bearer } })).statusCode).toBe(200);
    // Half the TTL later (30 s) the session (20 s) has ended: the cache must not answer for it.
    clock += TTL_MS / 2;
    await store().query(`UPDATE portal_sessions SET session_expires_at = now() - interval '1 second' WHERE org_id = $1`, [tenant.org.id]);
    expect((await app().inject({ url: '/api/limits/', headers: { authorization: bearer } })).statusCode).toBe(401);
  });
});
