import { expect, it, vi } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { startServer } from '../../src/server.js';
import type { Store, Transaction } from '../../src/store/store.js';
import { creditLimit, insertCreditLimits } from '../helpers/records.js';
import { openPgliteTestStore, openPostgresTestStore, testStoreVariants } from '../helpers/stores.js';
import { createTenant } from '../helpers/tenants.js';
import { describeWithPromtool, runPromtool } from '../ops/promtool.js';
import { sampleInText } from './metric-text.js';

const postgresUrl = process.env.DATABASE_URL ?? '';
const QUEUE_WAIT_MS = 250;

/** The store, whose next transaction (once `holdNext` is called) waits before it starts until released. */
function holdingNextTransaction(inner: Store) {
  let hold: { reached: () => void; released: Promise<void> } | undefined;
  const store = new Proxy(inner, {
    get(target, name, receiver) {
      if (name === 'transaction') {
        return async <T>(fn: (tx: Transaction) => Promise<T>, options?: Parameters<Store['transaction']>[1]) => {
          const held = hold;
          hold = undefined;
          if (held) {
            held.reached();
            await held.released;
          }
          return target.transaction(fn, options);
        };
      }
      const value: unknown = Reflect.get(target, name, receiver);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
  return {
    store,
    holdNext() {
      let reached = () => {};
      let release = () => {};
      const reachedPromise = new Promise<void>((resolve) => (reached = resolve));
      hold = { reached, released: new Promise<void>((resolve) => (release = resolve)) };
      return { reached: reachedPromise, release };
    },
  };
}


describeWithPromtool('the /metrics of a node that served reads, writes and errors', (promtool) => {
  for (const { kind } of testStoreVariants()) {
    it(`passes promtool check metrics with 0 problems (on ${kind})`, async () => {
      const opened = kind === 'postgres' ? await openPostgresTestStore(postgresUrl) : await openPgliteTestStore();
      const held = holdingNextTransaction(opened);
      // One write at a time, refused once it has waited 250 ms: a write held behind another is refused (503 overloaded).
      const config = loadConfig({
        DATABASE_URL: kind === 'postgres' ? postgresUrl : 'pglite://memory',
        PORT: '0',
        METRICS_PORT: '0',
        LOG_LEVEL: 'silent',
        WRITE_QUEUE_WAIT_MS: String(QUEUE_WAIT_MS),
        WRITE_CONCURRENCY: '1',
        WRITE_RATE_LIMIT_PER_MINUTE: '0',
        RATE_LIMIT_PER_MINUTE: '0',
      });
      // The server closes the store it was given.
      const server = await startServer(config, held.store);
      try {
        const reader = await createTenant(opened);
        const writer = await createTenant(opened, 'Writer', 'write');
        const limits = Array.from({ length: 4 }, () => creditLimit({ capacity: '100.00' }));
        const [first, second, third, small] = limits;
        await insertCreditLimits(opened, writer.org.id, limits);
        const get = (path: string, authorization?: string) => fetch(`${server.url}${path}`, { headers: authorization ? { authorization } : {} });
        const post = (uid: string | undefined, amount: string) =>
          fetch(`${server.url}/api/limits/${uid ?? ''}/drawdowns/`, {
            method: 'POST',
            headers: { authorization: writer.authorization, 'content-type': 'application/json', 'idempotency-key': crypto.randomUUID() },
            body: JSON.stringify({ amount }),
          });
        const answer = async (response: Response) => `${response.status} ${((await response.json()) as { code?: string }).code ?? ''}`.trim();
        const statuses = new Set<number>();
        for (const response of [await get('/api/methods/', reader.authorization), await get('/api/methods/pm_absent/', reader.authorization), await get('/api/methods/')]) {
          statuses.add(response.status);
          await response.text();
        }
        const alone = await post(first?.uid, '1.00');
        statuses.add(alone.status);
        expect(await answer(alone), 'a write alone').toBe('201');

        // The next write's transaction is held; the one after it waits in the queue past WRITE_QUEUE_WAIT_MS.
        const gate = held.holdNext();
        const heldWrite = post(second?.uid, '1.00');
        await gate.reached;
        const queuedWrite = post(third?.uid, '1.00');
        try {
          await vi.waitFor(async () => expect(sampleInText(await (await fetch(server.metricsUrl ?? '')).text(), 'lending_api_write_queue{state="waiting"}')).toBe(1), { timeout: 60_000, interval: 20 });
          // Measured from when the write was seen waiting, so it has waited longer than that by the release.
          await new Promise((resolve) => setTimeout(resolve, 2 * QUEUE_WAIT_MS));
        } finally {
          gate.release();
        }
        const [heldAnswer, queuedAnswer] = await Promise.all([heldWrite, queuedWrite]);
        statuses.add(heldAnswer.status).add(queuedAnswer.status);
        expect({ held: await answer(heldAnswer), queued: await answer(queuedAnswer) }).toEqual({ held: '201', queued: '503 overloaded' });

        const refused = await post(small?.uid, '500.00');
        statuses.add(refused.status);
        expect([...statuses]).toEqual(expect.arrayContaining([200, 201, 401, 404, 409, 503]));

        const exposition = await (await fetch(server.metricsUrl ?? '')).text();
        expect(exposition).toContain('lending_api_http_requests_total{method="POST",route="/api/limits/:uid/drawdowns/",status="201"}');
        const check = await runPromtool(promtool, ['check', 'metrics'], exposition);
        expect({ code: check.code, problems: `${check.stdout}${check.stderr}`.trim() }).toEqual({ code: 0, problems: '' });
      } finally {
        await server.close();
      }
    });
  }
});
