import pg from 'pg';
import { afterAll, afterEach, beforeAll, vi } from 'vitest';

/**
 * Records the text of every message node-postgres sends (each `query` of
 * every client, a multi-statement message as one text), for the tests of
 * the current suite; `sent()` holds those since the last test began or the
 * last `reset()`.
 */
export function recordPgMessages(): { sent: () => string[]; reset: () => void } {
  let sent: string[] = [];
  beforeAll(() => {
    const query = pg.Client.prototype.query;
    vi.spyOn(pg.Client.prototype, 'query').mockImplementation(function (this: pg.Client, ...args: unknown[]) {
      const [config] = args;
      sent.push(typeof config === 'string' ? config : (config as { text: string }).text);
      return (query as (...a: unknown[]) => unknown).apply(this, args) as never;
    });
  });
  afterEach(() => {
    sent = [];
  });
  afterAll(() => {
    vi.restoreAllMocks();
  });
  return {
    sent: () => sent,
    reset: () => {
      sent = [];
    },
  };
}
