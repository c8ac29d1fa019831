export interface RetryOptions {
  /** Attempts in all, the first included. Default 4; 1 turns retrying off. */
  readonly maxAttempts?: number;
  /** First backoff when the server gives no Retry-After; doubles each attempt. Default 500 ms. */
  readonly baseDelayMs?: number;
  /** The longest the client waits before one retry. A longer Retry-After is not waited for: the error is thrown. Default 30 s. */
  readonly maxDelayMs?: number;
}

export type HttpMethod = 'GET' | 'POST' | 'DELETE';

/**
 * Answers worth asking again: rate limited (429) and the database briefly
 * away or the service overloaded (503), whatever the method; and for a
 * write, 504 `outcome_unknown` (the database did not confirm the commit):
 * sent again with the same Idempotency-Key, it answers what was recorded or
 * records it once. No other 4xx is ever retried: the same request would get
 * the same answer (a 409 `insufficient_balance` stays one).
 */
export const RETRYABLE_STATUSES: ReadonlySet<number> = new Set([429, 503]);

export function retriesAnswer(status: number, method: HttpMethod = 'GET'): boolean {
  return RETRYABLE_STATUSES.has(status) || (status === 504 && method === 'POST');
}

/**
 * A request that got no answer (connection refused or dropped, the attempt
 * timed out) may or may not have been served. Only a write is sent again:
 * it carries an Idempotency-Key, so the server records it once whatever
 * happened to the first attempt. A GET reports the failure as it is.
 */
export function retriesFailure(method: HttpMethod): boolean {
  return method === 'POST';
}

const DEFAULTS = { maxAttempts: 4, baseDelayMs: 500, maxDelayMs: 30_000 };

/**
 * How long to wait before attempt `attempt + 1`, or undefined to give up.
 * The server's Retry-After wins; without one, exponential backoff with
 * jitter, so many clients turned away together do not return together.
 */
export function retryDelayMs(
  attempt: number,
  retryAfterSeconds: number | undefined,
  options: RetryOptions = {},
  random: () => number = Math.random,
): number | undefined {
  const { maxAttempts, baseDelayMs, maxDelayMs } = { ...DEFAULTS, ...options };
  if (attempt >= maxAttempts) return undefined;
  if (retryAfterSeconds !== undefined) {
    const wait = retryAfterSeconds * 1000;
    return wait <= maxDelayMs ? wait : undefined;
  }
  const ceiling = Math.min(maxDelayMs, baseDelayMs * 2 ** (attempt - 1));
  return Math.round(ceiling / 2 + (random() * ceiling) / 2);
}

/** Retry-After as delta-seconds or an HTTP date (RFC 9110 §10.2.3), in seconds from `now`. */
export function parseRetryAfter(value: string | null, now = Date.now()): number | undefined {
  if (value === null) return undefined;
  const trimmed = value.trim();
  if (/^[0-9]+$/.test(trimmed)) return Number(trimmed);
  // An HTTP date names its weekday and month; anything else is not one.
  if (!/[A-Za-z]/.test(trimmed)) return undefined;
  const at = Date.parse(trimmed);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - now) / 1000));
}
