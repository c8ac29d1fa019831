import { Registry } from 'prom-client';
import { expect, it } from 'vitest';
import { buildApp } from '../helpers/app.js';
import { createLogger } from '../../src/logger.js';
import { logBuffer } from '../helpers/log-buffer.js';
import { insertPaymentMethods, paymentMethod } from '../helpers/records.js';
import { describeEachStore } from '../helpers/stores.js';
import { createTenant, type Tenant } from '../helpers/tenants.js';

const FLOOD_CLIENTS = 40;

describeEachStore("one organization's flood", (store) => {
  it("is shed as 503 overloaded (Retry-After) for that organization, while another organization's reads are answered 200; logged and counted as overload (once per window, with a count), never as the database unreachable", async () => {
    const log = logBuffer();
    const flood: Tenant = await createTenant(store(), 'Flooding Lender');
    const quiet: Tenant = await createTenant(store(), 'Quiet Lender');
    await insertPaymentMethods(store(), quiet.org.id, [paymentMethod()]);
    // One query at a time, two waiting per organization: a small node's share, so that 40 clients exceed it.
    const metrics = new Registry();
    const app = await buildApp({ store: store(), loggerInstance: createLogger('info', log.stream), metrics, databaseShare: { slots: 1, queuePerTenant: 2 } });
    try {
      let flooding = true;
      const floodAnswers: { status: number; code?: string; retryAfter?: string | undefined; detail?: string }[] = [];
      const floodClient = async () => {
        while (flooding) {
          const response = await app.inject({ url: '/api/methods/', headers: { authorization: flood.authorization } });
          const problem = response.statusCode >= 400 ? (response.json() as { code: string; detail: string }) : undefined;
          floodAnswers.push({ status: response.statusCode, code: problem?.code, detail: problem?.detail, retryAfter: response.headers['retry-after'] as string | undefined });
          await new Promise((resolve) => setImmediate(resolve));
        }
      };
      const clients = Array.from({ length: FLOOD_CLIENTS }, floodClient);
      const quietStatuses: number[] = [];
      for (let i = 0; i < 10; i += 1) {
        const response = await app.inject({ url: '/api/methods/', headers: { authorization: quiet.authorization } });
        quietStatuses.push(response.statusCode);
      }
      flooding = false;
      await Promise.all(clients);
      // The last window ends, and its line is written.
      await new Promise((resolve) => setTimeout(resolve, 1100));

      expect(quietStatuses).toEqual(Array.from({ length: 10 }, () => 200));
      const refused = floodAnswers.filter((answer) => answer.status !== 200);
      expect(refused.length).toBeGreaterThan(0);
      for (const answer of refused) {
        expect(answer).toMatchObject({ status: 503, code: 'overloaded', retryAfter: '1' });
        expect(answer.detail).not.toMatch(/unreachable/);
      }
      // Counted as overload for the operator, too.
      const shed = (await metrics.getSingleMetric('lending_api_db_overloaded_total')?.get())?.values[0]?.value;
      expect(shed).toBe(refused.length);
    } finally {
      await app.close();
    }
    const lines = log.lines();
    expect(lines.filter((line) => Number(line.level) >= 50)).toEqual([]);
    expect(log.text()).not.toMatch(/unreachable/);
    const summaries = lines.filter((line) => typeof line.overloaded === 'number');
    const refusedCount = lines.filter((line) => line.msg === 'request' && line.status === 503).length;
    expect(refusedCount).toBeGreaterThan(0);
    expect(summaries.reduce((sum, line) => sum + Number(line.overloaded), 0)).toBe(refusedCount);
    // At most one line per second, however many refusals.
    const times = summaries.map((line) => Date.parse(String(line.time)));
    for (let i = 1; i < times.length; i += 1) expect((times[i] ?? 0) - (times[i - 1] ?? 0)).toBeGreaterThanOrEqual(900);
  });
});
