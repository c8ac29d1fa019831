import type { RedisBreaker } from './redis-breaker.js';
import type { RedisCounters } from './redis-counters.js';
import { counterNames, MemoryCounters, type WindowCount } from './window-counters.js';

export const WINDOW_MS = 60_000;

export interface RequestLimiterOptions {
  /** Requests per window per API key; 0: no budget. */
  perMinute: number;
  /** Failed authentications per window per address before it is blocked; 0: no throttle. */
  authFailuresPerMinute: number;
  /** Counters shared by every instance, behind a breaker; memory only when absent. */
  shared?: { counters: RedisCounters; breaker: RedisBreaker } | undefined;
  now?: () => number;
}

export type Verdict =
  | { kind: 'allowed'; budget?: Budget }
  | { kind: 'over_budget'; budget: Budget }
  | { kind: 'address_blocked'; resetMs: number };

export interface Budget extends WindowCount {
  readonly limit: number;
}

/**
 * Decides both limits. With Redis, each request costs one round trip (the
 * failure-count read and the key's increment in one script). While Redis is
 * unusable (breaker open, error, timeout) the counters of this process's
 * memory decide, never no limit at all. The memory counters are kept current
 * all the time, so switching to them hands no client a fresh budget for what
 * this process has seen.
 */
export class RequestLimiter {
  private readonly memory: MemoryCounters;
  /** Addresses Redis said are blocked, until when: rejected before authentication, without a round trip. */
  private readonly knownBlocked = new Map<string, number>();
  private readonly now: () => number;
  /** When the last failure window counted in memory ends: until then no address can be blocked in memory. */
  private failuresUntil = 0;

  constructor(private readonly options: RequestLimiterOptions) {
    this.now = options.now ?? Date.now;
    this.memory = new MemoryCounters(WINDOW_MS, 100_000, this.now);
  }

  /** Before authentication, without waiting on anything: how long the address is still blocked, if it is. */
  blockedBeforeAuth(address: string): number | undefined {
    if (this.options.authFailuresPerMinute <= 0) return undefined;
    const until = this.knownBlocked.get(address);
    if (until !== undefined) {
      if (until > this.now()) return until - this.now();
      this.knownBlocked.delete(address);
    }
    return this.usingMemory() ? this.blockedInMemory(address) : undefined;
  }

  /**
   * After a successful authentication: is the address blocked elsewhere, and is the key within its budget?
   * Decided at once from this process's memory when there is no Redis (a promise only when Redis is asked).
   */
  afterSuccess(address: string, keyId: string): Verdict | Promise<Verdict> {
    const local = this.options.perMinute > 0 ? this.memory.hit(counterNames.requests(keyId)) : undefined;
    return this.options.shared ? this.afterSuccessShared(this.options.shared, address, keyId, local) : this.memoryVerdict(address, local);
  }

  private async afterSuccessShared(shared: NonNullable<RequestLimiterOptions['shared']>, address: string, keyId: string, local: WindowCount | undefined): Promise<Verdict> {
    const { perMinute, authFailuresPerMinute } = this.options;
    const remote = await shared.breaker.call(() => shared.counters.admit(address, keyId, authFailuresPerMinute, perMinute > 0));
    if (remote) {
      if ('blockedMs' in remote) return this.blocked(address, remote.blockedMs);
      return budgetVerdict(remote.budget, perMinute);
    }
    return this.memoryVerdict(address, local);
  }

  private memoryVerdict(address: string, local: WindowCount | undefined): Verdict {
    const blockedMs = this.blockedInMemory(address);
    if (blockedMs !== undefined) return { kind: 'address_blocked', resetMs: blockedMs };
    return budgetVerdict(local, this.options.perMinute);
  }

  /** After a failed authentication: counts it; blocked once the address is past its allowance. */
  async afterFailure(address: string): Promise<Verdict> {
    const { authFailuresPerMinute: max, shared } = this.options;
    if (max <= 0) return ALLOWED;
    const local = this.memory.hit(counterNames.authFailures(address));
    this.failuresUntil = Math.max(this.failuresUntil, this.now() + local.resetMs);
    const remote = shared && (await shared.breaker.call(() => shared.counters.recordFailure(address)));
    const failures = remote ?? local;
    if (remote && failures.count >= max) this.remember(address, failures.resetMs);
    return failures.count > max ? { kind: 'address_blocked', resetMs: failures.resetMs } : ALLOWED;
  }

  private usingMemory(): boolean {
    return !this.options.shared || this.options.shared.breaker.isOpen;
  }

  private blockedInMemory(address: string): number | undefined {
    const max = this.options.authFailuresPerMinute;
    // Most of the time no failure is being counted: skip the counter's name and lookup (twice per request).
    if (max <= 0 || this.now() >= this.failuresUntil) return undefined;
    const failures = this.memory.peek(counterNames.authFailures(address));
    return failures.count >= max ? failures.resetMs : undefined;
  }

  private blocked(address: string, resetMs: number): Verdict {
    this.remember(address, resetMs);
    return { kind: 'address_blocked', resetMs };
  }

  private remember(address: string, resetMs: number): void {
    if (this.knownBlocked.size >= 100_000) this.knownBlocked.clear();
    this.knownBlocked.set(address, this.now() + resetMs);
  }
}

// One object for every verdict without a budget to report (most requests when no per-key limit is set).
const ALLOWED: Verdict = Object.freeze({ kind: 'allowed' });

function budgetVerdict(count: WindowCount | undefined, limit: number): Verdict {
  if (!count) return ALLOWED;
  const budget = { ...count, limit };
  return count.count > limit ? { kind: 'over_budget', budget } : { kind: 'allowed', budget };
}
