import { describe, expect, it } from 'vitest';
import { parseRetryAfter, retryDelayMs, retriesAnswer, retriesFailure } from '../../src/client/retry-policy.js';

describe('retryDelayMs', () => {
  it('waits exactly the Retry-After the server asked for', () => {
    expect(retryDelayMs(1, 7)).toBe(7000);
    expect(retryDelayMs(3, 0)).toBe(0);
  });

  it('gives up when the attempts are spent', () => {
    expect(retryDelayMs(4, 1)).toBeUndefined();
    expect(retryDelayMs(2, 1, { maxAttempts: 2 })).toBeUndefined();
    expect(retryDelayMs(1, 1, { maxAttempts: 1 })).toBeUndefined();
  });

  it('gives up rather than wait longer than maxDelayMs', () => {
    expect(retryDelayMs(1, 31)).toBeUndefined();
    expect(retryDelayMs(1, 5, { maxDelayMs: 4000 })).toBeUndefined();
  });

  it('backs off exponentially with jitter when there is no Retry-After, capped at maxDelayMs', () => {
    const options = { baseDelayMs: 100, maxDelayMs: 350, maxAttempts: 10 };
    expect([1, 2, 3, 4].map((attempt) => retryDelayMs(attempt, undefined, options, () => 0))).toEqual([50, 100, 175, 175]);
    expect([1, 2, 3, 4].map((attempt) => retryDelayMs(attempt, undefined, options, () => 1))).toEqual([100, 200, 350, 350]);
  });
});

describe('parseRetryAfter', () => {
  it('reads delta-seconds and HTTP dates', () => {
    const now = Date.parse('2025-01-06T09:00:00Z');
    expect(parseRetryAfter('5', now)).toBe(5);
    expect(parseRetryAfter(' 0 ', now)).toBe(0);
    expect(parseRetryAfter('Mon, 06 Jan 2025 09:00:30 GMT', now)).toBe(30);
    expect(parseRetryAfter('Mon, 06 Jan 2025 08:00:00 GMT', now)).toBe(0);
  });

  it('ignores a missing or unreadable header', () => {
    expect(parseRetryAfter(null)).toBeUndefined();
    expect(parseRetryAfter('soon')).toBeUndefined();
    expect(parseRetryAfter('-3')).toBeUndefined();
  });
});

describe('what is retried', () => {
  it('retries 429 and 503 answers, and a write\'s 504 outcome_unknown (with its key): no other 4xx or 5xx', () => {
    const statuses = [400, 401, 403, 404, 405, 409, 413, 415, 422, 429, 500, 502, 503, 504];
    expect(statuses.filter((status) => retriesAnswer(status, 'GET'))).toEqual([429, 503]);
    expect(statuses.filter((status) => retriesAnswer(status, 'POST'))).toEqual([429, 503, 504]);
  });

  it('sends again a request that got no answer only when it is a write, which carries an Idempotency-Key', () => {
    expect(retriesFailure('POST')).toBe(true);
    expect(retriesFailure('GET')).toBe(false);
  });
});
