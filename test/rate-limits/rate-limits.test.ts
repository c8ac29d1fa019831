import type { FastifyInstance } from 'fastify';
import type { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../helpers/app.js';
import { connectRedis } from '../../src/rate-limits/redis-client.js';
import { createLogger } from '../../src/logger.js';
import type { RateLimitOptions } from '../../src/rate-limits/rate-limits.js';
import { deleteRedisKeys, redisAvailable, TEST_REDIS_URL, uniqueRedisPrefix } from '../helpers/redis.js';
import { describeEachStore } from '../helpers/stores.js';
import { basicAuthorization, createTenant } from '../helpers/tenants.js';

const silent = createLogger('silent');

describeEachStore('rate limits', (store) => {
  const apps: FastifyInstance[] = [];
  const appWith = async (rateLimit: RateLimitOptions) => {
    const app = await buildApp({ store: store(), rateLimit });
    apps.push(app);
    return app;
  };
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((app) => app.close()));
  });

  describe('GET /api/methods/ per API key', () => {
    it('answers 429 problem+json with Retry-After and x-ratelimit headers once a key spends its budget', async () => {
      const app = await appWith({ perMinute: 3, authFailuresPerMinute: 0 });
      const tenant = await createTenant(store());
      const get = () => app.inject({ url: '/api/methods/', headers: { authorization: tenant.authorization } });

      const first = await get();
      expect(first.statusCode).toBe(200);
      expect(first.headers['x-ratelimit-limit']).toBe('3');
      expect(first.headers['x-ratelimit-remaining']).toBe('2');
      await get();
      await get();
      const limited = await get();

      expect(limited.statusCode).toBe(429);
      expect(limited.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect(limited.headers['x-ratelimit-limit']).toBe('3');
      expect(limited.headers['x-ratelimit-remaining']).toBe('0');
      expect(limited.headers['x-ratelimit-reset']).toBeDefined();
      expect(limited.json()).toMatchObject({ status: 429, code: 'rate_limited', request_id: limited.headers['x-request-id'] });
    });

    it('counts each API key separately, even two keys of one organization', async () => {
      const app = await appWith({ perMinute: 1, authFailuresPerMinute: 0 });
      const a = await createTenant(store());
      const b = await createTenant(store());
      expect((await app.inject({ url: '/api/methods/', headers: { authorization: a.authorization } })).statusCode).toBe(200);
      expect((await app.inject({ url: '/api/limits/', headers: { authorization: a.authorization } })).statusCode).toBe(429);
      expect((await app.inject({ url: '/api/limits/', headers: { authorization: b.authorization } })).statusCode).toBe(200);
    });

    it('limits nothing when the budget is 0 (RATE_LIMIT_PER_MINUTE=0)', async () => {
      const app = await appWith({ perMinute: 0, authFailuresPerMinute: 0 });
      const tenant = await createTenant(store());
      for (let i = 0; i < 5; i += 1) {
        const response = await app.inject({ url: '/api/methods/', headers: { authorization: tenant.authorization } });
        expect(response.statusCode).toBe(200);
        expect(response.headers['x-ratelimit-limit']).toBeUndefined();
      }
    });

    it('leaves health probes unlimited', async () => {
      const app = await appWith({ perMinute: 1, authFailuresPerMinute: 1 });
      for (let i = 0; i < 3; i += 1) expect((await app.inject({ url: '/readyz' })).statusCode).toBe(200);
    });
  });

  describe('failed authentication per client address', () => {
    it('answers 429 after too many failures, even to a correct key, so keys cannot be guessed without limit', async () => {
      const app = await appWith({ perMinute: 100, authFailuresPerMinute: 3 });
      const tenant = await createTenant(store());
      const wrong = basicAuthorization(tenant.org.uid, 'lak_0000000000000000_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA');
      for (let i = 0; i < 3; i += 1) {
        expect((await app.inject({ url: '/api/methods/', headers: { authorization: wrong } })).statusCode).toBe(401);
      }
      const blocked = await app.inject({ url: '/api/methods/', headers: { authorization: tenant.authorization } });
      expect(blocked.statusCode).toBe(429);
      expect(blocked.json()).toMatchObject({ code: 'rate_limited' });
      expect(Number(blocked.headers['retry-after'])).toBeGreaterThanOrEqual(1);

      const elsewhere = await app.inject({ url: '/api/methods/', remoteAddress: '203.0.113.9', headers: { authorization: tenant.authorization } });
      expect(elsewhere.statusCode).toBe(200);
    });

    it('counts IPv6 clients by their /64, so a host cannot rotate addresses for a fresh budget', async () => {
      const app = await appWith({ perMinute: 100, authFailuresPerMinute: 2 });
      const tenant = await createTenant(store());
      const wrong = basicAuthorization(tenant.org.uid, 'nope');
      for (const remoteAddress of ['2001:db8:1:2::a', '2001:0db8:0001:0002:ffff:ffff:ffff:ffff']) {
        expect((await app.inject({ url: '/api/methods/', remoteAddress, headers: { authorization: wrong } })).statusCode).toBe(401);
      }
      const sameNetwork = await app.inject({ url: '/api/methods/', remoteAddress: '2001:db8:1:2:1234::1', headers: { authorization: tenant.authorization } });
      expect(sameNetwork.statusCode).toBe(429);
      const nextNetwork = await app.inject({ url: '/api/methods/', remoteAddress: '2001:db8:1:3::a', headers: { authorization: tenant.authorization } });
      expect(nextNetwork.statusCode).toBe(200);
    });

    it('does not count successful requests as failures', async () => {
      const app = await appWith({ perMinute: 100, authFailuresPerMinute: 2 });
      const tenant = await createTenant(store());
      for (let i = 0; i < 4; i += 1) {
        expect((await app.inject({ url: '/api/methods/', headers: { authorization: tenant.authorization } })).statusCode).toBe(200);
      }
    });
  });
});

const redisUp = await redisAvailable();

describeEachStore('rate limits shared through Redis', (store) => {
  let redis: Redis;
  const prefix = uniqueRedisPrefix();
  beforeAll(async () => {
    redis = await connectRedis(TEST_REDIS_URL, silent);
  });
  afterAll(async () => {
    await deleteRedisKeys(redis, prefix);
    await redis.quit();
  });

  it.runIf(redisUp)('shares one budget per key between two instances', async () => {
    const options = { perMinute: 3, authFailuresPerMinute: 3, redis, redisPrefix: prefix, redisTimeoutMs: 5000 };
    const one = await buildApp({ store: store(), rateLimit: options });
    const two = await buildApp({ store: store(), rateLimit: options });
    try {
      const tenant = await createTenant(store());
      const statuses: number[] = [];
      for (const app of [one, two, one, two]) {
        statuses.push((await app.inject({ url: '/api/methods/', headers: { authorization: tenant.authorization } })).statusCode);
      }
      expect(statuses).toEqual([200, 200, 200, 429]);
      expect(await redis.keys(`${prefix}*`)).not.toHaveLength(0);
    } finally {
      await Promise.all([one.close(), two.close()]);
    }
  });

  it.runIf(redisUp)('shares failed-authentication counts between instances', async () => {
    const options = { perMinute: 100, authFailuresPerMinute: 2, redis, redisPrefix: uniqueRedisPrefix(), redisTimeoutMs: 5000 };
    const one = await buildApp({ store: store(), rateLimit: options });
    const two = await buildApp({ store: store(), rateLimit: options });
    try {
      const tenant = await createTenant(store());
      const wrong = basicAuthorization(tenant.org.uid, 'nope');
      const address = '198.51.100.7';
      expect((await one.inject({ url: '/api/limits/', remoteAddress: address, headers: { authorization: wrong } })).statusCode).toBe(401);
      expect((await two.inject({ url: '/api/limits/', remoteAddress: address, headers: { authorization: wrong } })).statusCode).toBe(401);
      const blocked = await one.inject({ url: '/api/limits/', remoteAddress: address, headers: { authorization: tenant.authorization } });
      expect(blocked.statusCode).toBe(429);
    } finally {
      await deleteRedisKeys(redis, options.redisPrefix);
      await Promise.all([one.close(), two.close()]);
    }
  });

  it('falls back to this process\'s counters when Redis is unreachable: the budget and the throttle still hold', async () => {
    const unreachable = await connectRedis('redis://127.0.0.1:1', silent, 200);
    const app = await buildApp({ store: store(), rateLimit: { perMinute: 2, authFailuresPerMinute: 1, redis: unreachable } });
    try {
      const tenant = await createTenant(store());
      const get = (remoteAddress = '192.0.2.1') =>
        app.inject({ url: '/api/methods/', remoteAddress, headers: { authorization: tenant.authorization } });
      const first = await get();
      expect(first.statusCode).toBe(200);
      // The headers report the counter really used: this process's.
      expect(first.headers['x-ratelimit-remaining']).toBe('1');
      expect((await get()).headers['x-ratelimit-remaining']).toBe('0');
      expect((await get()).statusCode).toBe(429);

      const wrong = basicAuthorization(tenant.org.uid, 'nope');
      const attacker = '198.51.100.66';
      expect((await app.inject({ url: '/api/limits/', remoteAddress: attacker, headers: { authorization: wrong } })).statusCode).toBe(401);
      const blocked = await app.inject({ url: '/api/limits/', remoteAddress: attacker, headers: { authorization: wrong } });
      expect(blocked.statusCode).toBe(429);
      expect(blocked.json()).toMatchObject({ code: 'rate_limited' });
    } finally {
      await app.close();
      unreachable.disconnect();
    }
  });
});
