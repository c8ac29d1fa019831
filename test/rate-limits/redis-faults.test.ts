import type { FastifyInstance } from 'fastify';
import type { Redis } from 'ioredis';
import { Registry } from 'prom-client';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { buildApp } from '../helpers/app.js';
import { connectRedis } from '../../src/rate-limits/redis-client.js';
import type { RateLimitOptions } from '../../src/rate-limits/rate-limits.js';
import { createLogger } from '../../src/logger.js';
import { logBuffer } from '../helpers/log-buffer.js';
import { startThrowawayRedis, type ThrowawayRedis } from '../helpers/redis.js';
import { describeEachStore } from '../helpers/stores.js';
import { basicAuthorization, createTenant } from '../helpers/tenants.js';

const silent = createLogger('silent');

async function until(condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

// A redis-server of this file's own: frozen and flushed here, never the shared one.
describeEachStore('rate limits on a Redis that misbehaves', (store) => {
  let server: ThrowawayRedis;
  let redis: Redis;
  const apps: FastifyInstance[] = [];
  const appWith = async (rateLimit: Omit<RateLimitOptions, 'redis'>, extra: { log?: ReturnType<typeof logBuffer>; metrics?: Registry } = {}) => {
    const app = await buildApp({
      store: store(),
      rateLimit: { ...rateLimit, redis },
      loggerInstance: createLogger('info', extra.log?.stream),
      metrics: extra.metrics,
    });
    apps.push(app);
    return app;
  };
  beforeAll(async () => {
    server = await startThrowawayRedis();
    redis = await connectRedis(server.url, silent);
  });
  afterEach(async () => {
    server.thaw();
    await Promise.all(apps.splice(0).map((app) => app.close()));
    await until(async () => (await redis.ping().catch(() => '')) === 'PONG', 'redis to answer');
    await redis.flushall();
  });
  afterAll(async () => {
    redis.disconnect();
    await server.stop();
  });

  it('names its keys on purpose: <prefix>requests:<key id> and <prefix>auth-failures:<address or IPv6 /64>', async () => {
    // A generous budget: a busy test machine must not open the breaker here.
    const app = await appWith({ perMinute: 10, authFailuresPerMinute: 10, redisTimeoutMs: 5000 });
    const tenant = await createTenant(store());
    const wrong = basicAuthorization(tenant.org.uid, 'nope');
    await app.inject({ url: '/api/methods/', headers: { authorization: tenant.authorization } });
    await app.inject({ url: '/api/methods/', remoteAddress: '198.51.100.7', headers: { authorization: wrong } });
    await app.inject({ url: '/api/methods/', remoteAddress: '2001:db8:0:7:a:b:c:d', headers: { authorization: wrong } });
    expect((await redis.keys('*')).sort()).toEqual([
      'lending-api:rate-limit:auth-failures:198.51.100.7',
      'lending-api:rate-limit:auth-failures:2001:db8:0:7::/64',
      `lending-api:rate-limit:requests:${tenant.keyId}`,
    ]);
    expect(await redis.get(`lending-api:rate-limit:requests:${tenant.keyId}`)).toBe('1');
    expect(await redis.pttl('lending-api:rate-limit:auth-failures:198.51.100.7')).toBeGreaterThan(50_000);
  });

  it('asks Redis once per request: the failure-count read and the key increment are one script', async () => {
    const app = await appWith({ perMinute: 100, authFailuresPerMinute: 10, redisTimeoutMs: 5000 });
    const tenant = await createTenant(store());
    const get = () => app.inject({ url: '/api/methods/', headers: { authorization: tenant.authorization } });
    expect((await get()).statusCode).toBe(200);
    // MONITOR shows each command a client sends (and, marked "lua", those a script runs).
    const monitor = await redis.monitor();
    const sent: string[] = [];
    monitor.on('monitor', (_time: string, args: string[], source: string) => {
      if (source !== 'lua') sent.push(String(args[0]).toLowerCase());
    });
    for (let i = 0; i < 5; i += 1) expect((await get()).statusCode).toBe(200);
    await until(() => sent.length >= 5, 'the commands to be seen');
    await new Promise((resolve) => setTimeout(resolve, 200));
    monitor.disconnect();
    expect(sent).toEqual(['evalsha', 'evalsha', 'evalsha', 'evalsha', 'evalsha']);
  });

  it('a hung Redis: one request waits the budget, the breaker opens (logged once, metric 1), later requests do not wait and are counted in memory; it closes once Redis answers', async () => {
    const log = logBuffer();
    const metrics = new Registry();
    const timeoutMs = 1500;
    const app = await appWith({ perMinute: 4, authFailuresPerMinute: 2, redisTimeoutMs: timeoutMs, redisCooldownMs: 200 }, { log, metrics });
    const tenant = await createTenant(store());
    const requestKey = `lending-api:rate-limit:requests:${tenant.keyId}`;
    const get = (remoteAddress = '192.0.2.1', authorization = tenant.authorization) =>
      app.inject({ url: '/api/methods/', remoteAddress, headers: { authorization } });
    const breakerGauge = async () => (await metrics.getSingleMetric('lending_api_redis_breaker_open')?.get())?.values[0]?.value;

    expect((await get()).headers['x-ratelimit-remaining']).toBe('3');
    expect(await breakerGauge()).toBe(0);
    server.freeze();

    const waited = await get();
    expect(waited.statusCode).toBe(200);
    expect(await breakerGauge()).toBe(1);
    const started = Date.now();
    const second = await get();
    const third = await get();
    const overBudget = await get();
    const wrong = basicAuthorization(tenant.org.uid, 'nope');
    const failures = [await get('198.51.100.9', wrong), await get('198.51.100.9', wrong), await get('198.51.100.9')];
    // Six requests, none of which waited for Redis (each would have waited 1.5 s).
    expect(Date.now() - started).toBeLessThan(timeoutMs);
    // This process's counters held both limits, and the headers say what they counted.
    expect([waited, second, third].map((response) => response.headers['x-ratelimit-remaining'])).toEqual(['2', '1', '0']);
    expect(overBudget.statusCode).toBe(429);
    expect(failures.map((response) => response.statusCode)).toEqual([401, 401, 429]);

    // Several probes fail while it stays frozen; still one line.
    await new Promise((resolve) => setTimeout(resolve, 700));
    server.thaw();
    await until(() => log.lines().some((line) => line.redis_breaker === 'closed'), 'the breaker to close');
    expect(await breakerGauge()).toBe(0);
    const breakerLines = log.lines().filter((line) => 'redis_breaker' in line);
    expect(breakerLines.map((line) => [line.redis_breaker, line.level])).toEqual([
      ['open', 40],
      ['closed', 30],
    ]);
    expect(breakerLines[0]?.msg).toMatch(/no answer within 1500 ms/);

    // Counted in Redis again.
    const before = Number(await redis.get(requestKey));
    await get('192.0.2.2');
    expect(Number(await redis.get(requestKey))).toBe(before + 1);
  });

  it('a stopped Redis: requests are answered at once from memory counters, and the breaker says so once', async () => {
    const log = logBuffer();
    const app = await appWith({ perMinute: 2, authFailuresPerMinute: 5, redisTimeoutMs: 5000, redisCooldownMs: 60_000 }, { log });
    const tenant = await createTenant(store());
    await redis.shutdown('NOSAVE').catch(() => undefined);
    await until(() => redis.status !== 'ready', 'the connection to drop');
    const started = Date.now();
    const statuses: number[] = [];
    for (let i = 0; i < 3; i += 1) statuses.push((await app.inject({ url: '/api/methods/', headers: { authorization: tenant.authorization } })).statusCode);
    expect(Date.now() - started).toBeLessThan(5000);
    expect(statuses).toEqual([200, 200, 429]);
    expect(log.lines().filter((line) => line.redis_breaker === 'open')).toHaveLength(1);
    await app.close();
    // Bring this file's Redis back for any later test.
    await server.stop();
    server = await startThrowawayRedis();
    redis.disconnect();
    redis = await connectRedis(server.url, silent);
  });
});
