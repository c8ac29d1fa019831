import type { Problem } from './generated.js';
import { LendingApiError } from './lending-api-error.js';
import { parseRetryAfter, retriesAnswer, retriesFailure, retryDelayMs, type HttpMethod, type RetryOptions } from './retry-policy.js';

/** The part of `fetch` the client uses: the global one fits, and so does any stand-in. */
export type FetchFunction = (
  input: string,
  init: { method: string; headers: Record<string, string>; body?: string; signal?: AbortSignal },
) => Promise<Response>;

/** One retry about to happen: reported to `onRetry` before the client waits `delayMs`. */
export interface RetryEvent {
  /** The attempt that was turned away, from 1. */
  readonly attempt: number;
  /** How long the client waits before the next attempt: the server's Retry-After, or the backoff. */
  readonly delayMs: number;
  /**
   * The 429 or 503 answer (a `LendingApiError`); for a write, also the
   * failure of a request that got no answer (the connection dropped or the
   * attempt timed out), which the Idempotency-Key makes safe to send again.
   */
  readonly error: LendingApiError | Error;
  readonly method: HttpMethod;
  readonly url: string;
  /** A write's Idempotency-Key: the same on every attempt of one call. */
  readonly idempotencyKey: string | undefined;
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

/** Per-call options of a write (`draw`, `repay`). */
export interface WriteOptions extends RequestOptions {
  /**
   * Names this logical write, so sending it again can never record it twice:
   * within 24 h the server answers a repeat with the first answer. Give your
   * own (e.g. your loan's id) to make a retry after a crash safe too; when
   * absent the client generates one per call and reuses it on every retry.
   */
  readonly idempotencyKey?: string | undefined;
}

const PROBLEM_CONTENT_TYPE = 'application/problem+json';
const DEFAULT_TIMEOUT_MS = 30_000;

/**
 * Requests JSON from lending-api with Basic credentials, retrying 429 and 503
 * (and, for writes, requests that got no answer: see `retry-policy.ts`).
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

  /** Waits `ms` as the client waits between retries (its `sleep`); rejects with the signal's reason when it aborts. */
  wait(ms: number, signal?: AbortSignal): Promise<void> {
    return untilAborted(this.#sleep(ms, signal), signal);
  }

  /**
   * GETs `path` as a stream (`Accept: text/event-stream`, no timeout on the
   * body): resolves with the response once its headers arrived; an error
   * answer is thrown as a `LendingApiError`, not retried.
   */
  async openStream(path: string, headers: Record<string, string>, signal: AbortSignal): Promise<Response> {
    const response = await this.#fetch(this.baseUrl + path, { method: 'GET', headers: { accept: 'text/event-stream', authorization: this.#authorization, ...headers }, signal });
    if (!response.ok) throw errorFrom(response, await response.text());
    return response;
  }

  /** `path` starts with `/` and may carry a query string. */
  getJson<T>(path: string, options: RequestOptions = {}): Promise<T> {
    return this.#send<T>({ method: 'GET', url: this.baseUrl + path, headers: {} }, options);
  }

  /**
   * POSTs `body` as JSON with an `Idempotency-Key` header: `options.idempotencyKey`,
   * or one generated for this call. Every retry of the call sends the same key,
   * so the server records the write once however often it is sent.
   */
  postJson<T>(path: string, body: unknown, options: WriteOptions = {}): Promise<T> {
    const idempotencyKey = options.idempotencyKey ?? newIdempotencyKey();
    return this.#send<T>(
      {
        method: 'POST',
        url: this.baseUrl + path,
        headers: { 'content-type': 'application/json', 'idempotency-key': idempotencyKey },
        body: JSON.stringify(body),
        idempotencyKey,
      },
      options,
    );
  }

  /**
   * POSTs `body` as JSON once, with no Idempotency-Key, for requests the
   * server does not replay (webhook endpoints, resends): only an answer that
   * says nothing ran (429, 503) is retried; a request that got no answer, or
   * a 504 `outcome_unknown`, is thrown, since sending it again could do it twice.
   */
  postOnce<T>(path: string, body: unknown, options: RequestOptions = {}): Promise<T> {
    return this.#send<T>({ method: 'POST', url: this.baseUrl + path, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }, options);
  }

  /** DELETEs `path`; resolves with the answer's JSON, or undefined when it has no body (204). Never resent when no answer came. */
  deleteJson<T = undefined>(path: string, options: RequestOptions = {}): Promise<T> {
    return this.#send<T>({ method: 'DELETE', url: this.baseUrl + path, headers: {} }, options);
  }

  async #send<T>(request: OutgoingRequest, options: RequestOptions): Promise<T> {
    const { method, url, idempotencyKey } = request;
    // Only a write with its Idempotency-Key may be sent again without an answer that says nothing ran.
    const retriesAs: HttpMethod = idempotencyKey === undefined ? 'GET' : method;
    for (let attempt = 1; ; attempt += 1) {
      let answer: { response: Response; body: string };
      try {
        answer = await this.#attempt(request, options);
      } catch (failure) {
        // The caller's own abort is never retried; a request with no answer only when it is a write with its key.
        if (options.signal?.aborted || !retriesFailure(retriesAs)) throw failure;
        const delayMs = retryDelayMs(attempt, undefined, this.#retry);
        if (delayMs === undefined) throw failure;
        this.#onRetry?.({ attempt, delayMs, error: failure instanceof Error ? failure : new Error(String(failure)), method, url, idempotencyKey });
        await untilAborted(this.#sleep(delayMs, options.signal), options.signal);
        continue;
      }
      const { response, body } = answer;
      if (response.ok) return (body === '' ? undefined : JSON.parse(body)) as T;
      const error = errorFrom(response, body);
      const delayMs = retriesAnswer(response.status, retriesAs) ? retryDelayMs(attempt, error.retryAfterSeconds, this.#retry) : undefined;
      if (delayMs === undefined) throw error;
      this.#onRetry?.({ attempt, delayMs, error, method, url, idempotencyKey });
      await untilAborted(this.#sleep(delayMs, options.signal), options.signal);
    }
  }

  /** One HTTP request, body read, within the timeout and the caller's signal. */
  async #attempt({ method, url, headers, body }: OutgoingRequest, options: RequestOptions): Promise<{ response: Response; body: string }> {
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
          method,
          headers: { accept: 'application/json', authorization: this.#authorization, ...headers },
          ...(body === undefined ? {} : { body }),
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

interface OutgoingRequest {
  readonly method: HttpMethod;
  readonly url: string;
  readonly headers: Record<string, string>;
  readonly body?: string;
  readonly idempotencyKey?: string;
}

/**
 * A random UUID. `crypto.randomUUID` exists only in secure contexts (https,
 * localhost); a page served over plain http still has `getRandomValues`.
 */
export function newIdempotencyKey(): string {
  if (typeof globalThis.crypto.randomUUID === 'function') return globalThis.crypto.randomUUID();
  const bytes = globalThis.crypto.getRandomValues(new Uint8Array(16));
  bytes[6] = ((bytes[6] ?? 0) & 0x0f) | 0x40;
  bytes[8] = ((bytes[8] ?? 0) & 0x3f) | 0x80;
  const hex = Array.from(bytes, (byte) => byte.toString(16).padStart(2, '0')).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
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
