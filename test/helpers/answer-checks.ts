import { expect } from 'vitest';
import type { LightMyRequestResponse } from 'fastify';

export interface AnyAnswer {
  readonly status: number;
  readonly headers: Record<string, unknown>;
  readonly body: string;
}

/** An inject() answer in the shape of a raw socket's. */
export function answerOf(response: LightMyRequestResponse): AnyAnswer {
  return { status: response.statusCode, headers: response.headers, body: response.body };
}

/** The headers every answer carries, error or not. */
export function expectIdAndSecurityHeaders(response: AnyAnswer): void {
  expect(response.headers['x-request-id']).toMatch(/^[\w.:-]{1,128}$/);
  expect(response.headers['x-request-id']).not.toBe('none');
  expect(response.headers['x-content-type-options']).toBe('nosniff');
  expect(response.headers['x-frame-options']).toBe('DENY');
  expect(response.headers['referrer-policy']).toBe('no-referrer');
}

/** What every error answer must carry, whatever rejected the request. */
export function expectProblemWithIdAndHeaders(response: AnyAnswer, status: number): void {
  expect(response.status, `${response.status} ${response.body.slice(0, 300)}`).toBe(status);
  expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
  expectIdAndSecurityHeaders(response);
  expect(response.headers['content-security-policy']).toBe("default-src 'none'; frame-ancestors 'none'");
  const problem = JSON.parse(response.body) as { status: number; request_id: string };
  expect(problem.status).toBe(status);
  expect(problem.request_id).toBe(response.headers['x-request-id']);
}
