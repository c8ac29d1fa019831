import { Writable } from 'node:stream';
import { describe, expect, it, vi } from 'vitest';
import { buildApp } from '../helpers/app.js';
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

const WINDOW_MS = 5000;

describe('log volume during a database outage', () => {
  it('logs the first failure with its cause, then one summary with the count per window, and an access line per request', async () => {
    const log = logLines();
    const store = unreachableStore();
    const app = await buildApp({ store, loggerInstance: createLogger('info', log.stream), outageSummaryMs: WINDOW_MS });
    const authorization = basicAuthorization('org_x', `lak_0000000000000000_${'A'.repeat(43)}`);
    // The windows run on a clock the test moves, so a slow machine cannot end a window (and the outage) between two requests.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    try {
      const fail = async (requests: number, from: number) => {
        for (let i = from; i < from + requests; i++) {
          const url = i % 2 === 0 ? '/api/methods/' : '/readyz';
          expect((await app.inject({ url, headers: { authorization } })).statusCode).toBe(503);
        }
      };
      const stacks = () => log.lines().filter((line) => typeof (line.err as { stack?: string } | undefined)?.stack === 'string');
      const summaries = () => log.lines().filter((line) => typeof line.failures === 'number');

      await fail(30, 0);
      expect(stacks()).toHaveLength(1);
      expect(stacks()[0]?.msg).toMatch(/^database unavailable/);
      expect(summaries()).toHaveLength(0);

      // The window ends: one summary of the 29 failures after the first; the next window opens at once.
      vi.advanceTimersByTime(WINDOW_MS);
      expect(summaries().map((line) => line.failures)).toEqual([29]);
      await fail(30, 30);
      vi.advanceTimersByTime(WINDOW_MS - 1);
      expect(summaries().map((line) => line.failures)).toEqual([29]);
      vi.advanceTimersByTime(1);
      expect(summaries().map((line) => line.failures)).toEqual([29, 30]);
      expect(stacks()).toHaveLength(1);
      const times = summaries().map((line) => Date.parse(String(line.time)));
      expect(Number(times[1]) - Number(times[0])).toBe(WINDOW_MS);

      // A window with no failure ends the outage: no summary for it, and the next failure is logged with its cause again.
      vi.advanceTimersByTime(WINDOW_MS);
      expect(summaries()).toHaveLength(2);
      await fail(1, 61);
      expect(stacks()).toHaveLength(2);

      const access = log.lines().filter((line) => line.msg === 'request');
      expect(access).toHaveLength(61);
      expect(access.every((line) => line.status === 503 && line.err === undefined)).toBe(true);
    } finally {
      vi.useRealTimers();
      await app.close();
      await store.close();
    }
  });
});
