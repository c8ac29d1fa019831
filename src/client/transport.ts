import type { Problem } from './generated.js';
import { LendingApiError } from './lending-api-error.js';
import { parseRetryAfter, retryDelayMs, RETRYABLE_STATUSES, type RetryOptions } from './retry-policy.js';

/** The part of `fetch` the client uses: the global one fits, and so does any stand-in. */
export type FetchFunction = (input: string, init: { method: string; headers: Record<string, string>; signal?: AbortSignal }) => Promise<Response>;

/** One retry about to happen: reported to `onRetry` before the client waits `delayMs`. */
export interface RetryEvent {
  /** The attempt that was turned away, from 1. */
  readonly attempt: number;
  /** How long the client waits before the next attempt: the server's Retry-After, or the backoff. */
  readonly delayMs: number;
  /** The 429 or 503 answer. */
  readonly error: LendingApiError;
  readonly url: string;
}

export interface ClientOptions {
  /** Where lending-api is served, e.g. `https://lending.example.com` (no `/api`). */
  readonly baseUrl: string;
  /** Your organization ID: the Basic user name. */
  readonly organizationId: string;
  /** An API key of that organization: the Basic password. */
  readonly apiKey: string;
  /** A `fetch` to use instead of the global one (a proxy agent, a test double, an app's in-process router). */
  readonly fetch?: FetchFunction | undefined;
  /** Retries of 429 and 503 answers; Retry-After is honoured. */
  readonly retry?: RetryOptions | undefined;
  /** Called before each retry's wait, so a caller is not left waiting in silence. */
  readonly onRetry?: ((event: RetryEvent) => void) | undefined;
  /** How long one HTTP request may take, answer body included, before it fails with a `TimeoutError`; 0 = no limit. Default 30 s. */
  readonly timeoutMs?: number | undefined;
  /** Waits between retries (default: a timer); it should give up when `signal` aborts. */
  readonly sleep?: ((ms: number, signal?: AbortSignal) => Promise<void>) | undefined;
}

/** Per-call options of every request method. */
export interface RequestOptions {
  /** Aborts the call, including a wait between retries; the call rejects with the signal's reason. */
  readonly signal?: AbortSignal | undefined;
  /** Overrides the client's `timeoutMs` for this call's requests. */
  readonly timeoutMs?: number | undefined;
}

const PROBLEM_CONTENT_TYPE = 'application/problem+json';
const DEFAULT_TIMEOUT_MS = 30_000;

/**
 * GETs JSON from lending-api with Basic credentials, retrying 429 and 503.
 * Uses only what browsers, Deno, Bun and edge runtimes have too (fetch,
 * AbortController, TextEncoder, btoa, timers): no Node APIs.
 */
export class Transport {
  readonly baseUrl: string;
  readonly #authorization: string;
  readonly #fetch: FetchFunction;
  readonly #retry: RetryOptions;
  readonly #onRetry: ((event: RetryEvent) => void) | undefined;
  readonly #timeoutMs: number;
  readonly #sleep: (ms: number, signal?: AbortSignal) => Promise<void>;

  constructor(options: ClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.#authorization = `Basic ${base64(`${options.organizationId}:${options.apiKey}`)}`;
    this.#fetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.#retry = options.retry ?? {};
    this.#onRetry = options.onRetry;
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.#sleep = options.sleep ?? sleep;
  }

  /** `path` starts with `/` and may carry a query string. */
  async getJson<T>(path: string, options: RequestOptions = {}): Promise<T> {
    const url = this.baseUrl + path;
    for (let attempt = 1; ; attempt += 1) {
      const { response, body } = await this.#attempt(url, options);
      if (response.ok) return JSON.parse(body) as T;
      const error = errorFrom(response, body);
      const delayMs = RETRYABLE_STATUSES.has(response.status) ? retryDelayMs(attempt, error.retryAfterSeconds, this.#retry) : undefined;
      if (delayMs === undefined) throw error;
      this.#onRetry?.({ attempt, delayMs, error, url });
      await untilAborted(this.#sleep(delayMs, options.signal), options.signal);
    }
  }

  /** One HTTP request, body read, within the timeout and the caller's signal. */
  async #attempt(url: string, options: RequestOptions): Promise<{ response: Response; body: string }> {
    const { signal } = options;
    signal?.throwIfAborted();
    const controller = new AbortController();
    const forward = () => controller.abort(signal?.reason);
    signal?.addEventListener('abort', forward, { once: true });
    const timeoutMs = options.timeoutMs ?? this.#timeoutMs;
    const timer =
      timeoutMs > 0
        ? setTimeout(() => controller.abort(new DOMException(`lending-api did not answer ${url} within ${timeoutMs} ms`, 'TimeoutError')), timeoutMs)
        : undefined;
    try {
      const request = async () => {
        const response = await this.#fetch(url, {
          method: 'GET',
          headers: { accept: 'application/json', authorization: this.#authorization },
          signal: controller.signal,
        });
        return { response, body: await response.text() };
      };
      return await untilAborted(request(), controller.signal);
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', forward);
    }
  }
}

/**
 * `work`, or the signal's reason as soon as it aborts: a `fetch` or `sleep`
 * that ignores its signal cannot hold the caller, and the error is the
 * timeout's or the caller's own rather than a generic AbortError.
 */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return work;
  return new Promise<T>((resolve, reject) => {
    const abort = () => reject(signal.reason);
    if (signal.aborted) abort();
    signal.addEventListener('abort', abort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', abort));
  });
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const abort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', abort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', abort, { once: true });
  });
}

function errorFrom(response: Response, body: string): LendingApiError {
  const options = {
    requestId: response.headers.get('x-request-id') ?? undefined,
    retryAfterSeconds: parseRetryAfter(response.headers.get('retry-after')),
    fallbackDetail: `HTTP ${response.status} ${response.statusText}`.trim(),
  };
  const contentType = response.headers.get('content-type') ?? '';
  if (!contentType.startsWith(PROBLEM_CONTENT_TYPE)) return new LendingApiError(response.status, undefined, options);
  try {
    return new LendingApiError(response.status, JSON.parse(body) as Problem, options);
  } catch {
    return new LendingApiError(response.status, undefined, options);
  }
}

/** UTF-8 safe base64, without Node's Buffer, so the SDK runs in browsers and edge runtimes too. */
function base64(text: string): string {
  let binary = '';
  for (const byte of new TextEncoder().encode(text)) binary += String.fromCharCode(byte);
  return btoa(binary);
}
