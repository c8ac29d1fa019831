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
