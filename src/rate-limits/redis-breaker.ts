import type { FastifyBaseLogger } from 'fastify';

export interface RedisBreakerOptions {
  /** How long one request may wait for Redis. */
  timeoutMs: number;
  /** How long to leave Redis alone after a failure before probing it again. */
  cooldownMs: number;
  /** A cheap command (PING) that tells whether Redis answers again. */
  probe: () => Promise<unknown>;
  log: FastifyBaseLogger;
}

/**
 * A circuit breaker in front of Redis. Closed: each call may wait up to
 * `timeoutMs`. The first error or timeout opens it (logged once): calls then
 * return at once without touching Redis, and the ones already waiting are
 * released. Every `cooldownMs` a background probe asks Redis; when it
 * answers, the breaker closes (logged once). No request ever waits for a
 * probe.
 */
export class RedisBreaker {
  private open = false;
  private probeTimer: NodeJS.Timeout | undefined;
  private stopped = false;
  private readonly waiting = new Set<() => void>();

  constructor(private readonly options: RedisBreakerOptions) {}

  get isOpen(): boolean {
    return this.open;
  }

  /** The task's result, or undefined when Redis is not to be used now (open, failed, too slow). */
  call<T>(task: () => Promise<T>): Promise<T | undefined> {
    if (this.open) return Promise.resolve(undefined);
    return new Promise<T | undefined>((resolve) => {
      let done = false;
      const finish = (value: T | undefined) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        this.waiting.delete(release);
        resolve(value);
      };
      const release = () => finish(undefined);
      const timer = setTimeout(() => {
        this.trip(`no answer within ${this.options.timeoutMs} ms`);
        finish(undefined);
      }, this.options.timeoutMs);
      this.waiting.add(release);
      Promise.resolve().then(task).then(finish, (error: unknown) => {
        this.trip(error instanceof Error ? error.message : String(error));
        finish(undefined);
      });
    });
  }

  /** Stops probing (the app is closing). */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.probeTimer);
  }

  private trip(reason: string): void {
    if (this.open || this.stopped) return;
    this.open = true;
    this.options.log.warn(
      { redis_breaker: 'open', reason },
      `redis unusable (${reason}): rate limits are counted in this process's memory; retrying Redis every ${this.options.cooldownMs} ms`,
    );
    for (const release of [...this.waiting]) release();
    this.scheduleProbe();
  }

  private scheduleProbe(): void {
    if (this.stopped) return;
    this.probeTimer = setTimeout(() => void this.probe(), this.options.cooldownMs);
    this.probeTimer.unref();
  }

  private async probe(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const answered = await Promise.race([
      this.options.probe().then(
        () => true,
        () => false,
      ),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(false), this.options.timeoutMs);
      }),
    ]);
    clearTimeout(timer);
    if (this.stopped) return;
    if (!answered) {
      this.scheduleProbe();
      return;
    }
    this.open = false;
    this.options.log.info({ redis_breaker: 'closed' }, 'redis answers again: rate limits are shared through Redis again');
  }
}
