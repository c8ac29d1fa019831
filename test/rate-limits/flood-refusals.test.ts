import { describe, expect, it } from 'vitest';
import { buildApp } from '../helpers/app.js';
import { rateLimited } from '../../src/rate-limits/rate-limit-answers.js';
import type { Store } from '../../src/store/store.js';
import { describeEachStore } from '../helpers/stores.js';
import { createTenant } from '../helpers/tenants.js';

// Issue 49: a key's flood past its budget slowed the other organizations. Refusing must cost far less
// than serving: no database work for a refused request, and no stack trace captured for its answer.

/** The store, counting the statements sent to it: key lookups and the rest. */
function countingStatements(inner: Store): { store: Store; keyLookups: () => number; others: () => number } {
  let keyLookups = 0;
  let others = 0;
  const store = new Proxy(inner, {
    get(target, property) {
      if (property === 'query') {
        return (sql: string, params?: readonly unknown[]) => {
          if (/FROM api_keys k JOIN organizations/.test(sql)) keyLookups += 1;
          else others += 1;
          return target.query(sql, params);
        };
      }
      // Without withBudget every query of a request goes through `query` above.
      if (property === 'withBudget') return undefined;
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
  return { store, keyLookups: () => keyLookups, others: () => others };
}

describeEachStore('a key flooding past its budget', (store) => {
  it('has its excess refused 429 with no database work: one key lookup for the whole flood, statements only for the requests served', async () => {
    const BUDGET = 5;
    const FLOOD = 200;
    const tenant = await createTenant(store());
    const served = countingStatements(store());
    // The statements one served read sends, measured on an app of its own with a warm key.
    const probe = await buildApp({ store: served.store, authCache: { ttlMs: 60_000 } });
    try {
      const get = () => probe.inject({ url: '/api/methods/', headers: { authorization: tenant.authorization } });
      expect((await get()).statusCode).toBe(200);
      const before = served.others();
      expect((await get()).statusCode).toBe(200);
      const perRead = served.others() - before;

      const counting = countingStatements(store());
      const app = await buildApp({ store: counting.store, authCache: { ttlMs: 60_000 }, rateLimit: { perMinute: BUDGET, authFailuresPerMinute: 10 } });
      try {
        const answers = await Promise.all(Array.from({ length: FLOOD }, () => app.inject({ url: '/api/methods/', headers: { authorization: tenant.authorization } })));
        const statuses = answers.map((answer) => answer.statusCode);
        expect(statuses.filter((status) => status === 200)).toHaveLength(BUDGET);
        expect(statuses.filter((status) => status === 429)).toHaveLength(FLOOD - BUDGET);
        expect(counting.keyLookups()).toBe(1);
        expect(counting.others()).toBeLessThanOrEqual(BUDGET * perRead);
      } finally {
        await app.close();
      }
    } finally {
      await probe.close();
    }
  });
});

describeEachStore('a key that goes on sending far past its budget', (store) => {
  it('has its refusals answered after a pause (at most 1 s, never past its window), once it has sent more than twice its budget', async () => {
    const held: { ms: number; release: () => void }[] = [];
    const pause = (ms: number) => new Promise<void>((release) => held.push({ ms, release }));
    const tenant = await createTenant(store());
    const other = await createTenant(store());
    const app = await buildApp({ store: store(), rateLimit: { perMinute: 2, authFailuresPerMinute: 0, pause } });
    try {
      const get = (authorization = tenant.authorization) => app.inject({ url: '/api/methods/', headers: { authorization } });
      // Within the budget, then refused at once up to twice the budget.
      expect([(await get()).statusCode, (await get()).statusCode]).toEqual([200, 200]);
      expect([(await get()).statusCode, (await get()).statusCode]).toEqual([429, 429]);
      expect(held).toEqual([]);

      let answered = false;
      const paused = get().then((response) => {
        answered = true;
        return response;
      });
      while (held.length === 0 && !answered) await new Promise((resolve) => setImmediate(resolve));
      expect(answered).toBe(false);
      expect(held).toHaveLength(1);
      expect(held[0]?.ms).toBeGreaterThan(0);
      expect(held[0]?.ms).toBeLessThanOrEqual(1000);
      // Another key's request is not held behind it.
      expect((await get(other.authorization)).statusCode).toBe(200);
      expect(answered).toBe(false);
      held[0]?.release();
      const refused = await paused;
      expect(refused.statusCode).toBe(429);
      expect(refused.json()).toMatchObject({ code: 'rate_limited' });
      expect(refused.headers['retry-after']).toMatch(/^\d+$/);
    } finally {
      for (const { release } of held) release();
      await app.close();
    }
  });
});

describe('a 429 refusal', () => {
  it('captures no stack trace (a tenth of a refusal’s CPU): it is an answer, never logged with one', () => {
    const refusal = rateLimited('this API key made more than 60 requests in a minute; retry in 3 s', { headers: { 'retry-after': '3' } });
    expect(refusal).toMatchObject({ code: 'rate_limited', status: 429, headers: { 'retry-after': '3' } });
    expect(refusal.stack?.split('\n')).toHaveLength(1);
    // Other errors keep theirs.
    expect(new Error('x').stack?.split('\n').length).toBeGreaterThan(1);
  });
});
