import type { FastifyInstance } from 'fastify';
import type { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/logger.js';
import type { RateLimitOptions } from '../../src/rate-limits/rate-limits.js';
import { connectRedis } from '../../src/rate-limits/redis-client.js';
import { buildApp, json } from '../helpers/app.js';
import { deleteRedisKeys, redisAvailable, TEST_REDIS_URL, uniqueRedisPrefix } from '../helpers/redis.js';
import { describeEachStore } from '../helpers/stores.js';
import { createTenant } from '../helpers/tenants.js';

const UNAUTHENTICATED = ['/healthz', '/readyz', '/api/openapi.json', '/docs'];

describe('UNAUTHENTICATED_RATE_LIMIT_PER_MINUTE (config)', () => {
  it('is 600 a minute by default, 0 turns it off, and anything else is refused naming it', () => {
    expect(loadConfig({}).unauthenticatedRateLimitPerMinute).toBe(600);
    expect(loadConfig({ UNAUTHENTICATED_RATE_LIMIT_PER_MINUTE: '0' }).unauthenticatedRateLimitPerMinute).toBe(0);
    for (const raw of ['-1', 'lots', '1000001']) {
      expect(() => loadConfig({ UNAUTHENTICATED_RATE_LIMIT_PER_MINUTE: raw })).toThrow(ConfigError);
      expect(() => loadConfig({ UNAUTHENTICATED_RATE_LIMIT_PER_MINUTE: raw })).toThrow(/^UNAUTHENTICATED_RATE_LIMIT_PER_MINUTE must/);
    }
  });
});

describeEachStore('the budget of the routes that take no API key, per client address', (store) => {
  const apps: FastifyInstance[] = [];
  const appWith = async (rateLimit: Partial<RateLimitOptions>) => {
    const app = await buildApp({ store: store(), rateLimit: { perMinute: 0, authFailuresPerMinute: 0, ...rateLimit } });
    apps.push(app);
    return app;
  };
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((app) => app.close()));
  });

  it('answers each probe and the reference with X-RateLimit-*, and 429 with Retry-After past the budget', async () => {
    for (const url of UNAUTHENTICATED) {
      const app = await appWith({ unauthenticatedPerMinute: 3 });
      const remoteAddress = '203.0.113.5';
      const answers = [];
      for (let i = 0; i < 4; i += 1) answers.push(await app.inject({ url, remoteAddress }));
      expect(answers.map((answer) => answer.statusCode), url).toEqual([200, 200, 200, 429]);
      expect(answers.map((answer) => answer.headers['x-ratelimit-remaining']), url).toEqual(['2', '1', '0', '0']);
      for (const answer of answers) expect(answer.headers['x-ratelimit-limit'], url).toBe('3');
      const limited = answers[3]!;
      expect(json(limited)).toMatchObject({ code: 'rate_limited' });
      expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect(Number(limited.headers['retry-after'])).toBeLessThanOrEqual(60);
      // Another address has its own budget; IPv6 addresses of one /64 share one.
      expect((await app.inject({ url, remoteAddress: '203.0.113.6' })).statusCode, url).toBe(200);
      expect((await app.inject({ url, remoteAddress: '2001:db8:1:2::a' })).statusCode).toBe(200);
      for (let i = 0; i < 2; i += 1) await app.inject({ url, remoteAddress: `2001:db8:1:2::${i + 1}` });
      expect((await app.inject({ url, remoteAddress: '2001:db8:1:2:ffff::9' })).statusCode, url).toBe(429);
    }
  });

  it("counts the reference page's assets, not the 405s on those paths nor the API, which the key's budget counts", async () => {
    const app = await appWith({ unauthenticatedPerMinute: 2, perMinute: 100 });
    const remoteAddress = '198.51.100.20';
    const tenant = await createTenant(store());
    for (let i = 0; i < 3; i += 1) {
      expect((await app.inject({ method: 'DELETE', url: '/healthz', remoteAddress })).statusCode).toBe(405);
      expect((await app.inject({ url: '/api/methods/', remoteAddress, headers: { authorization: tenant.authorization } })).headers['x-ratelimit-limit']).toBe('100');
    }
    expect((await app.inject({ url: '/docs/static/swagger-ui.css', remoteAddress })).statusCode).toBe(200);
    expect((await app.inject({ url: '/healthz', remoteAddress })).statusCode).toBe(200);
    expect((await app.inject({ url: '/readyz', remoteAddress })).statusCode).toBe(429);
  });

  it('limits nothing at 0 (UNAUTHENTICATED_RATE_LIMIT_PER_MINUTE=0), nor when all limits are off', async () => {
    for (const app of [await appWith({ unauthenticatedPerMinute: 0, perMinute: 5, authFailuresPerMinute: 5 }), await appWith({})]) {
      for (let i = 0; i < 10; i += 1) {
        const answer = await app.inject({ url: '/readyz', remoteAddress: '192.0.2.1' });
        expect(answer.statusCode).toBe(200);
        expect(answer.headers['x-ratelimit-limit']).toBeUndefined();
      }
    }
  });
});

const redisUp = await redisAvailable();

describeEachStore('the budget of the routes that take no API key, through Redis', (store) => {
  let redis: Redis;
  const prefix = uniqueRedisPrefix();
  beforeAll(async () => {
    redis = await connectRedis(TEST_REDIS_URL, createLogger('silent'));
  });
  afterAll(async () => {
    await deleteRedisKeys(redis, prefix);
    await redis.quit();
  });

  it.runIf(redisUp)("is one budget per address across instances (a load balancer's probes spread over nodes count once)", async () => {
    const options = { perMinute: 0, authFailuresPerMinute: 0, unauthenticatedPerMinute: 3, redis, redisPrefix: prefix, redisTimeoutMs: 5000 };
    const one = await buildApp({ store: store(), rateLimit: options });
    const two = await buildApp({ store: store(), rateLimit: options });
    try {
      const statuses: number[] = [];
      for (const app of [one, two, one, two]) statuses.push((await app.inject({ url: '/healthz', remoteAddress: '192.0.2.77' })).statusCode);
      expect(statuses).toEqual([200, 200, 200, 429]);
      expect(await redis.keys(`${prefix}requests:unauthenticated:*`)).toHaveLength(1);
    } finally {
      await Promise.all([one.close(), two.close()]);
    }
  });
});
