import { expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { startServer } from '../../src/server.js';
import { creditLimit, insertCreditLimits } from '../helpers/records.js';
import { openPgliteTestStore, openPostgresTestStore, testStoreVariants } from '../helpers/stores.js';
import { createTenant } from '../helpers/tenants.js';
import { describeWithPromtool, runPromtool } from '../ops/promtool.js';

const postgresUrl = process.env.DATABASE_URL ?? '';

describeWithPromtool('the /metrics of a node that served reads, writes and errors', (promtool) => {
  for (const { kind } of testStoreVariants()) {
    it(`passes promtool check metrics with 0 problems (on ${kind})`, async () => {
      const store = kind === 'postgres' ? await openPostgresTestStore(postgresUrl) : await openPgliteTestStore();
      // A queue that refuses a write whenever another is ahead of it, for 503 overloaded answers.
      const config = loadConfig({
        DATABASE_URL: kind === 'postgres' ? postgresUrl : 'pglite://memory',
        PORT: '0',
        METRICS_PORT: '0',
        LOG_LEVEL: 'silent',
        WRITE_QUEUE_WAIT_MS: '1',
        WRITE_CONCURRENCY: '1',
        WRITE_RATE_LIMIT_PER_MINUTE: '0',
        RATE_LIMIT_PER_MINUTE: '0',
      });
      // The server closes the store it was given.
      const server = await startServer(config, store);
      try {
        const reader = await createTenant(store);
        const writer = await createTenant(store, 'Writer', 'write');
        const newLimits = async () => {
          const limits = Array.from({ length: 12 }, () => creditLimit({ capacity: '100.00' }));
          await insertCreditLimits(store, writer.org.id, limits);
          return limits.map((limit) => limit.uid);
        };
        const get = (path: string, authorization?: string) => fetch(`${server.url}${path}`, { headers: authorization ? { authorization } : {} });
        const post = (uid: string, amount: string) =>
          fetch(`${server.url}/api/limits/${uid}/drawdowns/`, {
            method: 'POST',
            headers: { authorization: writer.authorization, 'content-type': 'application/json', 'idempotency-key': crypto.randomUUID() },
            body: JSON.stringify({ amount }),
          });
        const statuses = new Set<number>();
        for (const response of [await get('/api/methods/', reader.authorization), await get('/api/methods/pm_absent/', reader.authorization), await get('/api/methods/')]) {
          statuses.add(response.status);
          await response.text();
        }
        // Writes at once to distinct limits until the one-slot queue refuses some (503 overloaded) and records others (201).
        const codes = new Map<string, number>();
        for (let round = 0; round < 100 && !(statuses.has(201) && statuses.has(503)); round += 1) {
          const writes = await Promise.all((await newLimits()).map((uid) => post(uid, '1.00')));
          for (const response of writes) {
            statuses.add(response.status);
            const code = response.status === 201 ? '201' : `${response.status} ${((await response.json()) as { code?: string }).code}`;
            codes.set(code, (codes.get(code) ?? 0) + 1);
          }
        }
        const [small = ''] = await newLimits();
        const refused = await post(small, '500.00');
        statuses.add(refused.status);
        expect([...statuses], `the writes' answers: ${JSON.stringify([...codes])}`).toEqual(expect.arrayContaining([200, 201, 401, 404, 409, 503]));

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
