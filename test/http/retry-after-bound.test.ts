import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { MAX_RETRY_AFTER_SECONDS } from '../../src/domain/header-values.js';
import { sendProblem } from '../../src/http/problem.js';
import { overloaded } from '../../src/ledger/write-answers.js';
import openapi from '../../openapi.json' with { type: 'json' };

describe('Retry-After', () => {
  it('is declared with the maximum the service sends', () => {
    expect(openapi.components.headers['Retry-After'].schema).toMatchObject({ minimum: 0, maximum: MAX_RETRY_AFTER_SECONDS });
    expect(MAX_RETRY_AFTER_SECONDS).toBe(3600);
  });

  it("an overloaded write's Retry-After never exceeds the maximum, however long its queue's estimated wait", async () => {
    const app = Fastify();
    const waits = [0, 999, 1000, 1001, 59_000, 3_599_001, 3_600_000, 3_600_001, 86_400_000, 1e12, Number.MAX_SAFE_INTEGER];
    app.get('/write', async (request) => {
      throw overloaded(Number((request.query as { wait: string }).wait));
    });
    app.setErrorHandler(async (error, request, reply) => sendProblem(request, reply, error as Parameters<typeof sendProblem>[2]));
    try {
      for (const wait of waits) {
        const response = await app.inject({ url: `/write?wait=${wait}` });
        expect(response.statusCode).toBe(503);
        const seconds = Number(response.headers['retry-after']);
        expect(Number.isInteger(seconds), `wait ${wait} ms`).toBe(true);
        expect(seconds, `wait ${wait} ms`).toBeGreaterThanOrEqual(1);
        expect(seconds, `wait ${wait} ms`).toBeLessThanOrEqual(MAX_RETRY_AFTER_SECONDS);
        expect(seconds).toBe(Math.min(MAX_RETRY_AFTER_SECONDS, Math.max(1, Math.ceil(wait / 1000))));
        // The detail tells the same wait as the header.
        expect((response.json() as { detail: string }).detail).toContain(`retry after ${seconds} s`);
      }
    } finally {
      await app.close();
    }
  });
});
