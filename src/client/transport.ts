import type { Problem } from './generated.js';
import { LendingApiError } from './lending-api-error.js';
import { parseRetryAfter, retryDelayMs, RETRYABLE_STATUSES, type RetryOptions } from './retry-policy.js';

export type FetchFunction = (input: string, init: { method: string; headers: Record<string, string> }) => Promise<Response>;

export interface TransportOptions {
  readonly baseUrl: string;
  readonly organizationId: string;
  readonly apiKey: string;
  readonly fetch?: FetchFunction | undefined;
  readonly retry?: RetryOptions | undefined;
  /** Waits between retries; replace it to observe or cut the waits. */
  readonly sleep?: ((ms: number) => Promise<void>) | undefined;
}

const PROBLEM_CONTENT_TYPE = 'application/problem+json';

/** GETs JSON from lending-api with Basic credentials, retrying 429 and 503. */
export class Transport {
  readonly baseUrl: string;
  readonly #authorization: string;
  readonly #fetch: FetchFunction;
  readonly #retry: RetryOptions;
  readonly #sleep: (ms: number) => Promise<void>;

  constructor(options: TransportOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.#authorization = `Basic ${base64(`${options.organizationId}:${options.apiKey}`)}`;
    this.#fetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.#retry = options.retry ?? {};
    this.#sleep = options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
  }

  /** `path` starts with `/` and may carry a query string. */
  async getJson<T>(path: string): Promise<T> {
    const url = this.baseUrl + path;
    for (let attempt = 1; ; attempt += 1) {
      const response = await this.#fetch(url, {
        method: 'GET',
        headers: { accept: 'application/json', authorization: this.#authorization },
      });
      if (response.ok) return (await response.json()) as T;
      const error = await errorFrom(response);
      const delay = RETRYABLE_STATUSES.has(response.status) ? retryDelayMs(attempt, error.retryAfterSeconds, this.#retry) : undefined;
      if (delay === undefined) throw error;
      await this.#sleep(delay);
    }
  }
}

async function errorFrom(response: Response): Promise<LendingApiError> {
  const text = await response.text();
  const options = {
    requestId: response.headers.get('x-request-id') ?? undefined,
    retryAfterSeconds: parseRetryAfter(response.headers.get('retry-after')),
    fallbackDetail: `HTTP ${response.status} ${response.statusText}`.trim(),
  };
  const contentType = response.headers.get('content-type') ?? '';
  if (!contentType.startsWith(PROBLEM_CONTENT_TYPE)) return new LendingApiError(response.status, undefined, options);
  try {
    return new LendingApiError(response.status, JSON.parse(text) as Problem, options);
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
