import type { ParamError, Problem } from './generated.js';

export type ErrorCode = Problem['code'];

/**
 * An error answer from lending-api, carrying its RFC 9457 problem document.
 * `code` is stable and meant for programs; `detail` is for humans. A
 * response that is not a problem document (a proxy's error page, say) has
 * the code `unexpected_response`.
 *
 * @example
 * try {
 *   await client.paymentMethods.list({ created_from: 'yesterday' });
 * } catch (error) {
 *   if (error instanceof LendingApiError && error.code === 'invalid_parameter') {
 *     for (const { param, detail } of error.errors) console.error(param, detail);
 *   }
 * }
 */
export class LendingApiError extends Error {
  readonly status: number;
  readonly code: ErrorCode | 'unexpected_response';
  readonly type: string;
  readonly title: string;
  readonly detail: string;
  /** Every invalid parameter of a 422; empty otherwise. */
  readonly errors: ParamError[];
  /** The server's X-Request-Id: quote it when reporting a problem. */
  readonly requestId: string | undefined;
  /** Seconds the server asked to wait (429, 503), when it said. */
  readonly retryAfterSeconds: number | undefined;
  /** The whole problem document, extensions included (e.g. `last_page`). */
  readonly problem: Problem | undefined;

  constructor(status: number, problem: Problem | undefined, options: { requestId?: string | undefined; retryAfterSeconds?: number | undefined; fallbackDetail?: string } = {}) {
    const detail = problem?.detail ?? options.fallbackDetail ?? `HTTP ${status}`;
    super(detail);
    this.name = 'LendingApiError';
    this.status = status;
    this.code = problem?.code ?? 'unexpected_response';
    this.type = problem?.type ?? 'about:blank';
    this.title = problem?.title ?? `HTTP ${status}`;
    this.detail = detail;
    this.errors = problem?.errors ?? [];
    this.requestId = problem?.request_id ?? options.requestId;
    this.retryAfterSeconds = options.retryAfterSeconds;
    this.problem = problem;
  }
}
