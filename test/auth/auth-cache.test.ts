import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../helpers/app.js';
import { createAuthCache } from '../../src/auth/auth-cache.js';
import { revokeApiKey } from '../../src/auth/api-keys.js';
import type { Store } from '../../src/store/store.js';
import { describeEachStore } from '../helpers/stores.js';
import { basicAuthorization, createTenant } from '../helpers/tenants.js';

const TTL_MS = 5000;

describeEachStore('cached API-key verification', (store) => {
  let app: FastifyInstance;
  let clock = Date.now();
  beforeAll(async () => {
    app = await buildApp({ store: store(), authCache: { ttlMs: TTL_MS, now: () => clock } });
  });
  afterAll(async () => {
    await app.close();
  });

  const get = (authorization: string) => app.inject({ url: '/api/methods/', headers: { authorization } });

  it('stops accepting a revoked key once the revocation bound has passed', async () => {
    const tenant = await createTenant(store());
    expect((await get(tenant.authorization)).statusCode).toBe(200);
    await revokeApiKey(store(), tenant.keyId);
    clock += TTL_MS - 1;
    expect((await get(tenant.authorization)).statusCode).toBe(200);
    clock += 1;
    const response = await get(tenant.authorization);
    expect(response.statusCode).toBe(401);
    expect(response.headers['www-authenticate']).toMatch(/^Basic /);
  });

  it('never lets a wrong secret for a cached key through', async () => {
    const tenant = await createTenant(store());
    expect((await get(tenant.authorization)).statusCode).toBe(200);
    const lastChar = tenant.apiKey.endsWith('A') ? 'B' : 'A';
    const wrongSecret = tenant.apiKey.slice(0, -1) + lastChar;
    expect((await get(basicAuthorization(tenant.org.uid, wrongSecret))).statusCode).toBe(401);
  });

  it('never lets a cached key through for another organization', async () => {
    const tenant = await createTenant(store());
    const other = await createTenant(store());
    expect((await get(tenant.authorization)).statusCode).toBe(200);
    expect((await get(basicAuthorization(other.org.uid, tenant.apiKey))).statusCode).toBe(401);
  });
});

/** The store, counting the key lookups (the authentication query) sent to it. */
function countingKeyLookups(inner: Store): { store: Store; lookups: () => number } {
  let lookups = 0;
  const store = new Proxy(inner, {
    get(target, property) {
      if (property === 'query') {
        return (sql: string, params?: readonly unknown[]) => {
          if (/FROM api_keys k JOIN organizations/.test(sql)) lookups += 1;
          return target.query(sql, params);
        };
      }
      // Without withBudget every query of a request goes through `query` above.
      if (property === 'withBudget') return undefined;
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
  return { store, lookups: () => lookups };
}

describeEachStore('concurrent requests with one key (single-flight)', (store) => {
  it('send the key lookup to the database once, not once per request, when the key is not cached yet', async () => {
    const tenant = await createTenant(store());
    const counting = countingKeyLookups(store());
    const app = await buildApp({ store: counting.store, authCache: { ttlMs: TTL_MS } });
    try {
      const answers = await Promise.all(Array.from({ length: 50 }, () => app.inject({ url: '/api/methods/', headers: { authorization: tenant.authorization } })));
      expect(answers.map((answer) => answer.statusCode)).toEqual(Array(50).fill(200));
      expect(counting.lookups()).toBe(1);
    } finally {
      await app.close();
    }
  });

  it('share a failed verification among themselves only: the next request asks the database again', async () => {
    const tenant = await createTenant(store());
    const counting = countingKeyLookups(store());
    const app = await buildApp({ store: counting.store, authCache: { ttlMs: TTL_MS } });
    const wrong = basicAuthorization(tenant.org.uid, tenant.apiKey.slice(0, -1) + (tenant.apiKey.endsWith('A') ? 'B' : 'A'));
    try {
      const answers = await Promise.all(Array.from({ length: 20 }, () => app.inject({ url: '/api/methods/', headers: { authorization: wrong } })));
      expect(answers.map((answer) => answer.statusCode)).toEqual(Array(20).fill(401));
      const before = counting.lookups();
      expect(before).toBe(1);
      expect((await app.inject({ url: '/api/methods/', headers: { authorization: wrong } })).statusCode).toBe(401);
      expect(counting.lookups()).toBe(before + 1);
    } finally {
      await app.close();
    }
  });
});

describe('createAuthCache', () => {
  const credentials = basicAuthorization('org_1', 'lak_0123456789abcdef_secret');
  const auth = { orgId: '1', orgUid: 'org_1', keyId: 'key_0123456789abcdef', scope: 'read' as const };

  it('does not trust a key past its own expiry, even within the TTL', () => {
    let now = 1_000_000;
    const cache = createAuthCache({ ttlMs: TTL_MS, now: () => now });
    cache.remember(credentials, { ...auth, keyExpiresAtMs: now + 1000 });
    now += 999;
    expect(cache.get(credentials)).toEqual({ ...auth, keyExpiresAtMs: 1_001_000 });
    now += 1;
    expect(cache.get(credentials)).toBeUndefined();
  });

  it('hits only for the header exactly as it was remembered (another spelling is verified again)', () => {
    const cache = createAuthCache({ ttlMs: TTL_MS });
    cache.remember(credentials, auth);
    expect(cache.get(credentials)).toEqual(auth);
    expect(cache.get(credentials.replace(/^Basic/, 'basic'))).toBeUndefined();
    expect(cache.get(`${credentials} `)).toBeUndefined();
  });

  it('forgets a header on request, including a verification still running when it was forgotten', async () => {
    const cache = createAuthCache({ ttlMs: TTL_MS });
    cache.remember(credentials, auth);
    cache.forget(credentials);
    expect(cache.get(credentials)).toBeUndefined();

    let finish: (value: typeof auth) => void = () => undefined;
    const running = cache.verify(credentials, () => new Promise((resolve) => (finish = resolve)));
    cache.forget(credentials);
    finish(auth);
    expect(await running).toEqual(auth);
    expect(cache.get(credentials)).toBeUndefined();
  });

  it('caches nothing when the TTL is 0', () => {
    const cache = createAuthCache({ ttlMs: 0 });
    cache.remember(credentials, auth);
    expect(cache.get(credentials)).toBeUndefined();
  });

  it('holds at most maxEntries, dropping the oldest', () => {
    const cache = createAuthCache({ ttlMs: TTL_MS, maxEntries: 2 });
    const nth = (n: number) => basicAuthorization('org_1', `lak_0123456789abcdef_secret${n}`);
    cache.remember(nth(1), auth);
    cache.remember(nth(2), auth);
    cache.remember(nth(3), auth);
    expect(cache.get(nth(1))).toBeUndefined();
    expect(cache.get(nth(2))).toEqual(auth);
    expect(cache.get(nth(3))).toEqual(auth);
  });
});
