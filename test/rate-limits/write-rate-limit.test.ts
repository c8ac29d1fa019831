import { beforeAll, expect, it } from 'vitest';
import { json, useApp } from '../helpers/app.js';
import { creditLimit, insertCreditLimits } from '../helpers/records.js';
import { describeEachStore } from '../helpers/stores.js';
import { createTenant, type Tenant } from '../helpers/tenants.js';
import { ledgerState, postEntry } from '../helpers/writes.js';

describeEachStore('the write budget', (store) => {
  const app = useApp(store, { rateLimit: { perMinute: 100, writesPerMinute: 3, authFailuresPerMinute: 0 } });
  let writer: Tenant;

  beforeAll(async () => {
    writer = await createTenant(store(), 'Writer', 'write');
    await insertCreditLimits(store(), writer.org.id, [creditLimit({ uid: 'cl_budget' })]);
  });

  it('answers 429 past the per-key write budget, with Retry-After and X-RateLimit-*, and leaves reads their own budget', async () => {
    const answers = [];
    for (let i = 0; i < 4; i += 1) answers.push(await postEntry(app(), 'drawdown', 'cl_budget', { amount: '1' }, { authorization: writer.authorization }));
    expect(answers.map((answer) => answer.statusCode)).toEqual([201, 201, 201, 429]);
    expect(answers[0]?.headers['x-ratelimit-limit']).toBe('3');
    expect(answers[2]?.headers['x-ratelimit-remaining']).toBe('0');
    const limited = answers[3];
    expect(json(limited!)).toMatchObject({ code: 'rate_limited' });
    expect(limited?.headers['retry-after']).toMatch(/^\d+$/);
    expect(limited?.headers['x-ratelimit-limit']).toBe('3');
    expect(await ledgerState(store(), writer.org.id, 'cl_budget')).toEqual({ outstanding: '3.00', entries: 3 });
    // Reads are counted against the read budget (100), untouched by the writes.
    const read = await app().inject({ url: '/api/limits/cl_budget/', headers: { authorization: writer.authorization } });
    expect(read.statusCode).toBe(200);
    expect(read.headers['x-ratelimit-limit']).toBe('100');
    expect(read.headers['x-ratelimit-remaining']).toBe('99');
  });
});
