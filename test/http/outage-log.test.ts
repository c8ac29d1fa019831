import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.js';
import { createLogger } from '../../src/logger.js';
import { basicAuthorization } from '../helpers/tenants.js';
import { unreachableStore } from '../helpers/unreachable-store.js';

function logLines() {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      chunks.push(chunk.toString('utf8'));
      done();
    },
  });
  const lines = () =>
    chunks
      .join('')
      .split('\n')
      .filter((line) => line.trim() !== '')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
  return { stream, lines, bytes: () => chunks.join('').length };
}

const WINDOW_MS = 300;

describe('log volume during a database outage', () => {
  it('logs the first failure with its cause, then one summary with the count per window, and an access line per request', async () => {
    const log = logLines();
    const store = unreachableStore();
    const app = await buildApp({ store, loggerInstance: createLogger('info', log.stream), outageSummaryMs: WINDOW_MS });
    const authorization = basicAuthorization('org_x', `lak_0000000000000000_${'A'.repeat(43)}`);
    try {
      const total = 60;
      const started = Date.now();
      for (let i = 0; i < total; i++) {
        const url = i % 2 === 0 ? '/api/methods/' : '/readyz';
        expect((await app.inject({ url, headers: { authorization } })).statusCode).toBe(503);
      }
      const elapsed = Date.now() - started;
      const stacks = () => log.lines().filter((line) => typeof (line.err as { stack?: string } | undefined)?.stack === 'string');
      expect(stacks()).toHaveLength(1);
      expect(stacks()[0]?.msg).toMatch(/^database unavailable/);

      // Let the last window close: the summaries count every other failure, at most one per window.
      await new Promise((resolve) => setTimeout(resolve, 2 * WINDOW_MS));
      const summaries = log.lines().filter((line) => typeof line.failures === 'number');
      expect(summaries.reduce((sum, line) => sum + Number(line.failures), 0)).toBe(total - 1);
      expect(summaries.length).toBeLessThanOrEqual(Math.ceil(elapsed / WINDOW_MS) + 1);
      const times = summaries.map((line) => Date.parse(String(line.time)));
      for (let i = 1; i < times.length; i++) expect(Number(times[i]) - Number(times[i - 1])).toBeGreaterThanOrEqual(WINDOW_MS - 50);

      // A quiet window ended the outage: the next failure is logged with its cause again.
      await app.inject({ url: '/readyz' });
      expect(stacks()).toHaveLength(2);

      const access = log.lines().filter((line) => line.msg === 'request');
      expect(access).toHaveLength(total + 1);
      expect(access.every((line) => line.status === 503 && line.err === undefined)).toBe(true);
    } finally {
      await app.close();
      await store.close();
    }
  });
});
