import type { FastifyBaseLogger } from 'fastify';

export const DEFAULT_OUTAGE_SUMMARY_MS = 5000;

/**
 * Keeps an outage from flooding the log: at 200 requests a second, one
 * error line with a stack per 503 is megabytes a minute of the same cause.
 * The first failure is logged with its cause; later ones are only counted,
 * and a summary line with the count is written at most once per
 * `summaryMs`. A window with no failure ends the outage: the next failure is
 * logged in full again. Every request still has its own access line.
 */
export class OutageLog {
  private counted = 0;
  private window: NodeJS.Timeout | undefined;

  constructor(
    private readonly log: FastifyBaseLogger,
    private readonly summaryMs = DEFAULT_OUTAGE_SUMMARY_MS,
  ) {}

  failure(error: unknown, requestId: string): void {
    if (this.window) {
      this.counted++;
      return;
    }
    this.log.error(
      { err: error, request_id: requestId },
      `database unavailable: answering 503; further failures are counted and summarized at most every ${this.summaryMs / 1000} s`,
    );
    this.startWindow();
  }

  /** Writes what is still counted (on shutdown). */
  close(): void {
    clearTimeout(this.window);
    this.window = undefined;
    this.summarize();
  }

  private startWindow(): void {
    this.window = setTimeout(() => {
      this.window = undefined;
      // Failures in the window that just ended: the outage goes on, and the next window starts.
      if (this.summarize()) this.startWindow();
    }, this.summaryMs);
    this.window.unref();
  }

  private summarize(): boolean {
    if (this.counted === 0) return false;
    this.log.error(
      { failures: this.counted, window_ms: this.summaryMs },
      `database still unavailable: ${this.counted} more request(s) answered 503 in the last ${this.summaryMs / 1000} s`,
    );
    this.counted = 0;
    return true;
  }
}

export const DEFAULT_OVERLOAD_SUMMARY_MS = 1000;

/** Requests answered `overloaded`: their access line is an info line like a 429's, not an error line. */
const overloadAnswers = new WeakSet<object>();

export function answeredOverloaded(request: object): boolean {
  return overloadAnswers.has(request);
}

/**
 * Overload is not a fault: a flood refused as `overloaded` is the service
 * working as designed, and one line with a stack per refusal (thousands a
 * second) would bury the log. Refusals are counted; one warning line per
 * `summaryMs` (at most once a second by default) gives the count, by code
 * and reason, of the window that ended. Every request still has its own
 * access line.
 */
export class OverloadLog {
  private counted = 0;
  private window: NodeJS.Timeout | undefined;

  constructor(
    private readonly log: FastifyBaseLogger,
    private readonly summaryMs = DEFAULT_OVERLOAD_SUMMARY_MS,
  ) {}

  refused(request: object): void {
    overloadAnswers.add(request);
    this.counted++;
    if (this.window) return;
    this.window = setTimeout(() => {
      this.window = undefined;
      this.summarize();
    }, this.summaryMs);
    this.window.unref();
  }

  /** Writes what is still counted (on shutdown). */
  close(): void {
    clearTimeout(this.window);
    this.window = undefined;
    this.summarize();
  }

  private summarize(): void {
    if (this.counted === 0) return;
    this.log.warn(
      { overloaded: this.counted, window_ms: this.summaryMs },
      `overloaded: ${this.counted} request(s) answered 503 overloaded in the last ${this.summaryMs / 1000} s (the database is answering; the load exceeds the share of it each organization gets on this node)`,
    );
    this.counted = 0;
  }
}
