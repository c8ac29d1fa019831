import { Redis } from 'ioredis';
import type { Logger } from 'pino';

/**
 * A Redis client for shared rate-limit counters that never makes a request
 * wait on Redis: commands fail at once while disconnected (no offline queue)
 * and time out quickly, so the limiter can fail open. It reconnects forever in
 * the background.
 */
export async function connectRedis(url: string, log: Logger, waitMs = 1000): Promise<Redis> {
  const redis = new Redis(url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: 500,
    connectTimeout: 1000,
    retryStrategy: (attempt) => Math.min(attempt * 200, 2000),
  });
  let healthy = true;
  redis.on('ready', () => {
    if (!healthy) log.info('redis reachable again: rate limits are shared again');
    healthy = true;
  });
  redis.on('error', (error: Error) => {
    if (healthy) log.warn({ err: error }, 'redis unreachable: rate limiting fails open until it returns');
    healthy = false;
  });
  await new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, waitMs);
    redis.once('ready', () => {
      clearTimeout(timer);
      resolve();
    });
  });
  return redis;
}
