const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

/** Each delay is scaled by a random factor in [1 − JITTER, 1 + JITTER), so endpoints that failed together do not retry together. */
export const RETRY_JITTER = 0.2;

/**
 * The wait before each retry of a failed delivery (index 0: after the first
 * attempt). Attempt 1 is immediate; with the lowest jitter the last attempt
 * is still more than 72 h after it, so an endpoint gets at least 3 days.
 *
 * | attempt | wait before it | since attempt 1 (nominal) |
 * |--------:|---------------:|--------------------------:|
 * |  2      | 5 s            | 5 s                       |
 * |  3      | 30 s           | 35 s                      |
 * |  4      | 2 min          | 2 min 35 s                |
 * |  5      | 10 min         | 12 min 35 s               |
 * |  6      | 30 min         | 42 min 35 s               |
 * |  7      | 1 h            | 1 h 43 min                |
 * |  8      | 2 h            | 3 h 43 min                |
 * |  9      | 4 h            | 7 h 43 min                |
 * | 10      | 8 h            | 15 h 43 min               |
 * | 11–17   | 12 h each      | 27 h 43 min … 99 h 43 min |
 *
 * With jitter, attempt 17 comes 79.8 h to 119.7 h after attempt 1; after it
 * the delivery is given up.
 */
export const RETRY_DELAYS_MS: readonly number[] = [
  5 * SECOND,
  30 * SECOND,
  2 * MINUTE,
  10 * MINUTE,
  30 * MINUTE,
  1 * HOUR,
  2 * HOUR,
  4 * HOUR,
  8 * HOUR,
  ...Array<number>(7).fill(12 * HOUR),
];

/** One row of the schedule, for the docs: when `attempt` happens, counted from attempt 1. */
export interface RetryScheduleRow {
  readonly attempt: number;
  readonly delayMs: number;
  readonly nominalMs: number;
  readonly earliestMs: number;
  readonly latestMs: number;
}

/** The whole schedule, attempt 2 to the last (see RETRY_DELAYS_MS). */
export const RETRY_SCHEDULE: readonly RetryScheduleRow[] = RETRY_DELAYS_MS.map((delayMs, index) => {
  const nominalMs = RETRY_DELAYS_MS.slice(0, index + 1).reduce((sum, delay) => sum + delay, 0);
  return { attempt: index + 2, delayMs, nominalMs, earliestMs: nominalMs * (1 - RETRY_JITTER), latestMs: nominalMs * (1 + RETRY_JITTER) };
});

/** The number of attempts a delivery gets before it is given up. */
export const MAX_ATTEMPTS = RETRY_DELAYS_MS.length + 1;

/**
 * How long to wait after attempt `attemptNumber` (1 = the first) failed
 * before the next one, with jitter; null when that was the last attempt.
 * `random` returns a number in [0, 1), as Math.random does.
 */
export function nextAttemptDelayMs(attemptNumber: number, random: () => number = Math.random): number | null {
  if (!Number.isInteger(attemptNumber) || attemptNumber < 1) throw new RangeError(`attempt numbers start at 1, got ${attemptNumber}`);
  const base = RETRY_DELAYS_MS[attemptNumber - 1];
  if (base === undefined) return null;
  return Math.round(base * (1 + RETRY_JITTER * (2 * random() - 1)));
}
