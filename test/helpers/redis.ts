import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';

export const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/**
 * Whether the local Redis answers. In CI it must: a missing Redis fails the
 * run there instead of skipping the shared-limit tests.
 */
export async function redisAvailable(url = TEST_REDIS_URL): Promise<boolean> {
  const probe = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, connectTimeout: 1000, retryStrategy: () => null });
  probe.on('error', () => {});
  try {
    await probe.connect();
    await probe.ping();
    return true;
  } catch (error) {
    if (process.env.CI) throw new Error(`CI needs Redis at ${url} (.ci/run starts it): ${String(error)}`);
    return false;
  } finally {
    probe.disconnect();
  }
}

/** A key prefix of this test run's own, so parallel runs sharing one Redis never collide. */
export function uniqueRedisPrefix(): string {
  return `lending-api-test:${randomBytes(6).toString('hex')}:`;
}

/** Deletes every key under `prefix`. */
export async function deleteRedisKeys(redis: Redis, prefix: string): Promise<void> {
  const keys = await redis.keys(`${prefix}*`);
  if (keys.length > 0) await redis.del(...keys);
}
