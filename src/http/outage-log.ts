import type { FastifyBaseLogger } from 'fastify';

export const DEFAULT_OUTAGE_SUMMARY_MS = 5000;
export const DEFAULT_OVERLOAD_SUMMARY_MS = 1000;

/**
 * Counts events and reports the count at the end of a window of `windowMs` (a timer that keeps no
 * process alive). With `chain`, a window that ended with events opens the next one at once.
 */
class CountingWindow {
  private counted = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    readonly windowMs: number,
    private readonly report: (count: number) => void,
    private readonly chain: boolean,
  ) {}

  get isOpen(): boolean {
    return this.timer !== undefined;
  }

  count(): void {
    this.counted++;
  }

  open(): void {
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      if (this.flush() && this.chain) this.open();
    }, this.windowMs);
    this.timer.unref();
  }

  /** Reports what is still counted (on shutdown). */
  close(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.flush();
  }

  private flush(): boolean {
    if (this.counted === 0) return false;
    const count = this.counted;
    this.counted = 0;
    this.report(count);
    return true;
  }
}

/**
 * Keeps an outage from flooding the log: at 200 requests a second, one
 * error line with a stack per 503 is megabytes a minute of the same cause.
 * The first failure is logged with its cause; later ones are only counted,
 * and a summary line with the count is written at most once per
 * `summaryMs`. A window with no failure ends the outage: the next failure is
 * logged in full again. Every request still has its own access line.
 */
export class OutageLog {
  private readonly window: CountingWindow;

  constructor(
    private readonly log: FastifyBaseLogger,
    summaryMs = DEFAULT_OUTAGE_SUMMARY_MS,
  ) {
    this.window = new CountingWindow(
      summaryMs,
      (failures) => log.error({ failures, window_ms: summaryMs }, `database still unavailable: ${failures} more request(s) answered 503 in the last ${summaryMs / 1000} s`),
      true,
    );
  }

  failure(error: unknown, requestId: string): void {
    if (this.window.isOpen) {
      this.window.count();
      return;
    }
    this.log.error(
      { err: error, request_id: requestId },
      `database unavailable: answering 503; further failures are counted and summarized at most every ${this.window.windowMs / 1000} s`,
    );
    this.window.open();
  }

  /** Writes what is still counted (on shutdown). */
  close(): void {
    this.window.close();
  }
}

/** Requests answered `overloaded`: their access line is an info line like a 429's, not an error line. */
const overloadAnswers = new WeakSet<object>();

export function answeredOverloaded(request: object): boolean {
  return overloadAnswers.has(request);
}

/**
 * Overload is not a fault: a flood refused as `overloaded` is the service
 * working as designed, and one line with a stack per refusal (thousands a
 * second) would bury the log. Refusals are counted; one warning line per
 * `summaryMs` (at most once a second by default) gives the count of the
 * window that ended. Every request still has its own access line.
 */
export class OverloadLog {
  private readonly window: CountingWindow;

  constructor(log: FastifyBaseLogger, summaryMs = DEFAULT_OVERLOAD_SUMMARY_MS) {
    this.window = new CountingWindow(
      summaryMs,
      (overloaded) =>
        log.warn(
          { overloaded, window_ms: summaryMs },
          `overloaded: ${overloaded} request(s) answered 503 overloaded in the last ${summaryMs / 1000} s (the database is answering; the load exceeds the share of it each organization gets on this node)`,
        ),
      false,
    );
  }

  refused(request: object): void {
    overloadAnswers.add(request);
    this.window.count();
    this.window.open();
  }

  /** Writes what is still counted (on shutdown). */
  close(): void {
    this.window.close();
  }
}
