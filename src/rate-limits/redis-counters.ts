import type { Redis } from 'ioredis';
import { counterNames, type WindowCount } from './window-counters.js';

// One round trip per request. 'failure': count a failed authentication.
// 'admit': read the address's failure count and, unless it is blocked, count
// the request against its key's budget. Returns {count, ms to reset};
// count -1 means the address is blocked for that long.
const SCRIPT = `
local window = tonumber(ARGV[2])
local function hit(key)
  local count = redis.call('INCR', key)
  local ttl = redis.call('PTTL', key)
  if ttl < 0 then
    redis.call('PEXPIRE', key, window)
    ttl = window
  end
  return {count, ttl}
end
if ARGV[1] == 'failure' then return hit(KEYS[1]) end
local maxFailures = tonumber(ARGV[3])
if maxFailures > 0 and tonumber(redis.call('GET', KEYS[1]) or '0') >= maxFailures then
  return {-1, math.max(redis.call('PTTL', KEYS[1]), 1)}
end
if ARGV[4] == '1' then return hit(KEYS[2]) end
return {0, 0}
`;

const COMMAND = 'lendingApiRateLimit';

type ScriptReply = [number, number];
type RedisWithScript = Redis & Record<typeof COMMAND, (...args: (string | number)[]) => Promise<ScriptReply>>;

export type Admission = { blockedMs: number } | { budget: WindowCount | undefined };

/**
 * Both limits' counters in Redis, shared by every instance. Key names:
 * `<prefix>requests:<key id>` and `<prefix>auth-failures:<address or /64>`.
 * Both keys of a request are touched by one script, so a Redis Cluster must
 * not be used (the keys live in different slots); a single Redis (with a
 * replica for failover) is what this needs.
 */
export class RedisCounters {
  private readonly redis: RedisWithScript;

  constructor(
    redis: Redis,
    private readonly prefix: string,
    private readonly windowMs: number,
  ) {
    if (!(COMMAND in redis)) redis.defineCommand(COMMAND, { numberOfKeys: 2, lua: SCRIPT });
    this.redis = redis as RedisWithScript;
  }

  async recordFailure(address: string): Promise<WindowCount> {
    const key = this.prefix + counterNames.authFailures(address);
    const [count, resetMs] = await this.redis[COMMAND](key, key, 'failure', this.windowMs, 0, 0);
    return { count, resetMs };
  }

  /** Blocked when the address has `maxFailures` failures (0: no throttle); else counts the key's request when `countRequest`. */
  async admit(address: string, keyId: string, maxFailures: number, countRequest: boolean): Promise<Admission> {
    const [count, resetMs] = await this.redis[COMMAND](
      this.prefix + counterNames.authFailures(address),
      this.prefix + counterNames.requests(keyId),
      'admit',
      this.windowMs,
      maxFailures,
      countRequest ? 1 : 0,
    );
    if (count === -1) return { blockedMs: resetMs };
    return { budget: countRequest ? { count, resetMs } : undefined };
  }

  ping(): Promise<unknown> {
    return this.redis.ping();
  }
}
