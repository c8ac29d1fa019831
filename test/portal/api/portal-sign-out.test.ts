import { expect, it } from 'vitest';
import { useApp } from '../../helpers/app.js';
import { describeEachStore } from '../../helpers/stores.js';
import { createTenant } from '../../helpers/tenants.js';
import { openSession } from './portal-helpers.js';

// Longer than the test: a 401 right after signing out can only come from the cache letting go.
const TTL_MS = 60 * 60_000;

describeEachStore('signing out of a portal session (DELETE /api/portal_sessions/current/)', (store) => {
  const app = useApp(store, { authCache: { ttlMs: TTL_MS } });
  const limits = async (authorization: string) => (await app().inject({ url: '/api/limits/', headers: { authorization } })).statusCode;
  const signOut = (authorization: string) => app().inject({ method: 'DELETE', url: '/api/portal_sessions/current/', headers: { authorization } });

  it('ends that session at once, even while this node has it cached, and leaves the key’s other sessions working', async () => {
    const tenant = await createTenant(store(), 'Sign-out Lender', 'write');
    const first = await openSession(app(), tenant.authorization);
    const second = await openSession(app(), tenant.authorization);
    expect(await limits(first.bearer)).toBe(200);
    expect(await limits(second.bearer)).toBe(200);

    const ended = await signOut(first.bearer);
    expect(ended.statusCode, ended.body).toBe(204);
    expect(ended.body).toBe('');

    const after = await app().inject({ url: '/api/limits/', headers: { authorization: first.bearer } });
    expect(after.statusCode).toBe(401);
    expect(after.json<{ detail: string }>().detail).toContain('portal session has ended');
    expect(await limits(second.bearer)).toBe(200);
    expect(await limits(tenant.authorization)).toBe(200);
    // Signing out again: the session is gone.
    expect((await signOut(first.bearer)).statusCode).toBe(401);
  });

  it('stores the end, so the nodes that have not cached the session refuse it too', async () => {
    const tenant = await createTenant(store());
    const { bearer } = await openSession(app(), tenant.authorization);
    expect((await signOut(bearer)).statusCode).toBe(204);
    const [row] = await store().query<{ ended: boolean }>('SELECT session_expires_at <= now() AS ended FROM portal_sessions WHERE org_id = $1', [tenant.org.id]);
    expect(row?.ended).toBe(true);
  });

  it('refuses an API key (HTTP Basic), saying it ends a portal session, and ends nothing', async () => {
    const tenant = await createTenant(store());
    const { bearer } = await openSession(app(), tenant.authorization);
    const refused = await signOut(tenant.authorization);
    expect(refused.statusCode).toBe(400);
    expect(refused.headers['content-type']).toContain('application/problem+json');
    expect(refused.json<{ detail: string }>().detail).toContain('ends the portal session');
    expect(await limits(tenant.authorization)).toBe(200);
    expect(await limits(bearer)).toBe(200);
  });

  it('asks for credentials without any', async () => {
    const response = await app().inject({ method: 'DELETE', url: '/api/portal_sessions/current/' });
    expect(response.statusCode).toBe(401);
  });
});
