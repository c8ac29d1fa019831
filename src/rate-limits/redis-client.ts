import { Redis } from 'ioredis';
import type { Logger } from 'pino';

/**
 * A Redis client for shared rate-limit counters that never makes a request
 * wait on a missing Redis: commands fail at once while disconnected (no
 * offline queue). How long a request waits on a connected but silent Redis is
 * the rate limiter's budget (RedisBreaker), which also logs, once, when Redis
 * becomes unusable and when it is back. It reconnects forever in the
 * background.
 */
export async function connectRedis(url: string, log: Logger, waitMs = 1000): Promise<Redis> {
  const redis = new Redis(url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    // A backstop only: the limiter gives up on Redis much sooner.
    commandTimeout: 2000,
    connectTimeout: 1000,
    retryStrategy: (attempt) => Math.min(attempt * 200, 2000),
  });
  // Every reconnection attempt errors while Redis is away: the breaker says so once.
  redis.on('error', (error: Error) => log.debug({ err: error }, 'redis connection error'));
  await new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, waitMs);
    redis.once('ready', () => {
      clearTimeout(timer);
      resolve();
    });
  });
  return redis;
}
