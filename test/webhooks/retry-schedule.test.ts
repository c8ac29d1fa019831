import { describe, expect, it } from 'vitest';
import { MAX_ATTEMPTS, nextAttemptDelayMs, RETRY_DELAYS_MS, RETRY_JITTER, RETRY_SCHEDULE } from '../../src/webhooks/retry-schedule.js';

const HOUR = 3_600_000;
const lowest = () => 0;
const highest = () => 1 - Number.EPSILON;

/** Every delay a delivery that never succeeds waits, in order, with the given randomness. */
function allDelays(random: () => number): number[] {
  const delays: number[] = [];
  for (let attempt = 1; ; attempt++) {
    const delay = nextAttemptDelayMs(attempt, random);
    if (delay === null) return delays;
    delays.push(delay);
  }
}
const sum = (values: readonly number[]) => values.reduce((total, value) => total + value, 0);

describe('nextAttemptDelayMs', () => {
  it('keeps retrying for more than 72 hours even with the lowest jitter', () => {
    expect(sum(allDelays(lowest))).toBeGreaterThan(72 * HOUR);
  });

  it('gives up after MAX_ATTEMPTS attempts, within about 5 days at the most', () => {
    expect(allDelays(Math.random)).toHaveLength(MAX_ATTEMPTS - 1);
    expect(nextAttemptDelayMs(MAX_ATTEMPTS)).toBeNull();
    expect(sum(allDelays(highest))).toBeLessThan(5 * 24 * HOUR);
  });

  it('starts within seconds and backs off: each nominal delay is at least the previous one', () => {
    expect(nextAttemptDelayMs(1, () => 0.5)).toBe(5_000);
    const nominal = allDelays(() => 0.5);
    expect(nominal).toEqual(RETRY_DELAYS_MS);
    nominal.slice(1).forEach((delay, index) => expect(delay).toBeGreaterThanOrEqual(nominal[index]!));
  });

  it('spreads each delay within ±20%', () => {
    for (let attempt = 1; attempt < MAX_ATTEMPTS; attempt++) {
      const base = RETRY_DELAYS_MS[attempt - 1]!;
      expect(nextAttemptDelayMs(attempt, lowest)).toBe(Math.round(base * (1 - RETRY_JITTER)));
      expect(nextAttemptDelayMs(attempt, highest)).toBeLessThanOrEqual(Math.round(base * (1 + RETRY_JITTER)));
      expect(nextAttemptDelayMs(attempt, highest)).toBeGreaterThan(base);
    }
    const samples = new Set(Array.from({ length: 20 }, () => nextAttemptDelayMs(9)));
    expect(samples.size).toBeGreaterThan(1);
  });

  it('refuses attempt numbers that are not whole and positive', () => {
    for (const attempt of [0, -1, 1.5, Number.NaN]) expect(() => nextAttemptDelayMs(attempt)).toThrow(RangeError);
  });
});

describe('RETRY_SCHEDULE', () => {
  it('lists every retry with when it comes, for the docs', () => {
    expect(RETRY_SCHEDULE.map((row) => row.attempt)).toEqual(Array.from({ length: MAX_ATTEMPTS - 1 }, (_, index) => index + 2));
    const last = RETRY_SCHEDULE.at(-1)!;
    expect(last.nominalMs).toBe(sum(RETRY_DELAYS_MS));
    expect(last.earliestMs).toBeGreaterThan(72 * HOUR);
    expect(last.earliestMs).toBeCloseTo(sum(allDelays(lowest)), -3);
    expect(RETRY_SCHEDULE[0]).toEqual({ attempt: 2, delayMs: 5_000, nominalMs: 5_000, earliestMs: 4_000, latestMs: 6_000 });
  });
});
