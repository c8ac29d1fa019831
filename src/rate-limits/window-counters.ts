/** A fixed-window count: how many hits so far, and when the window ends. */
export interface WindowCount {
  readonly count: number;
  /** Milliseconds until the window ends and the count starts again from 0. */
  readonly resetMs: number;
}

// What peek answers for a name with no window running (every request from an address that never failed).
const NO_HITS: WindowCount = Object.freeze({ count: 0, resetMs: 0 });

/** The counters both limits use, named on purpose (Redis keys add a prefix). */
export const counterNames = {
  /** Requests made with one API key (its per-minute budget). */
  requests: (keyId: string) => `requests:${keyId}`,
  /** Failed authentications from one client address (or IPv6 /64). */
  authFailures: (address: string) => `auth-failures:${address}`,
};

/**
 * Fixed-window counters in this process's memory: the only counters without
 * Redis, and the fallback while Redis is unusable. A window starts at a key's
 * first hit. The map is bounded, so a flood of new addresses cannot exhaust
 * memory: past `maxEntries` ended windows are dropped, then the oldest.
 */
export class MemoryCounters {
  private readonly windows = new Map<string, { count: number; endsAt: number }>();

  constructor(
    private readonly windowMs: number,
    private readonly maxEntries = 100_000,
    private readonly now: () => number = Date.now,
  ) {}

  hit(name: string): WindowCount {
    const now = this.now();
    let window = this.windows.get(name);
    if (!window || window.endsAt <= now) {
      this.makeRoom(now);
      window = { count: 0, endsAt: now + this.windowMs };
      this.windows.set(name, window);
    }
    window.count += 1;
    return { count: window.count, resetMs: window.endsAt - now };
  }

  peek(name: string): WindowCount {
    const now = this.now();
    const window = this.windows.get(name);
    return window && window.endsAt > now ? { count: window.count, resetMs: window.endsAt - now } : NO_HITS;
  }

  private makeRoom(now: number): void {
    if (this.windows.size < this.maxEntries) return;
    for (const [name, window] of this.windows) if (window.endsAt <= now) this.windows.delete(name);
    for (const name of this.windows.keys()) {
      if (this.windows.size < this.maxEntries) break;
      this.windows.delete(name);
    }
  }
}
