import { beforeAll, expect, it } from 'vitest';
import { json, useApp } from '../../helpers/app.js';
import { creditLimit, insertCreditLimits } from '../../helpers/records.js';
import { describeEachStore } from '../../helpers/stores.js';
import { createTenant, type Tenant } from '../../helpers/tenants.js';
import { ledgerState, postEntry } from '../../helpers/writes.js';

describeEachStore('concurrent writes', (store) => {
  const app = useApp(store);
  let writer: Tenant;

  beforeAll(async () => {
    writer = await createTenant(store(), 'Writer', 'write');
  });

  it('lets exactly 150 of 200 concurrent drawdowns through when the balance covers 150: the rest get 409, the balance ends at 0', async () => {
    await insertCreditLimits(store(), writer.org.id, [creditLimit({ uid: 'cl_hot', capacity: '1500.00' })]);
    // A busy machine may keep a request waiting for a pooled connection past its bound (503, nothing
    // written): the client retries it with its Idempotency-Key, as the SDK does.
    const drawOnce = async (idempotencyKey: string) => {
      for (;;) {
        const answer = await postEntry(app(), 'drawdown', 'cl_hot', { amount: '10.00' }, { authorization: writer.authorization, idempotencyKey });
        if (answer.statusCode !== 503) return answer;
      }
    };
    const answers = await Promise.all(Array.from({ length: 200 }, (_, i) => drawOnce(`hot-${i}`)));
    const statuses = answers.map((answer) => answer.statusCode);
    const unexpected = answers.filter((answer) => answer.statusCode !== 201 && answer.statusCode !== 409).map((answer) => answer.body);
    expect(unexpected).toEqual([]);
    expect(statuses.filter((status) => status === 201)).toHaveLength(150);
    expect(statuses.filter((status) => status === 409)).toHaveLength(50);
    for (const refused of answers.filter((answer) => answer.statusCode === 409)) expect(json(refused)).toMatchObject({ code: 'insufficient_balance' });
    // No two successes saw the same balance: each took 10 off the one before.
    const balances = answers.filter((answer) => answer.statusCode === 201).map((answer) => json<{ limit: { balance: number } }>(answer).limit.balance);
    expect(new Set(balances).size).toBe(150);
    expect(Math.min(...balances)).toBe(0);
    expect(await ledgerState(store(), writer.org.id, 'cl_hot')).toEqual({ outstanding: '1500.00', entries: 150 });
    const limit = json<{ balance: number }>(await app().inject({ url: '/api/limits/cl_hot/', headers: { authorization: writer.authorization } }));
    expect(limit.balance).toBe(0);
    // 200 requests through PGlite's one connection can take minutes on a busy 2-core machine.
  }, 600_000);
});

describeEachStore('writes across tenants', (store) => {
  const app = useApp(store);
  let alpha: Tenant;
  let beta: Tenant;

  beforeAll(async () => {
    alpha = await createTenant(store(), 'Alpha', 'write');
    beta = await createTenant(store(), 'Beta', 'write');
    await insertCreditLimits(store(), beta.org.id, [creditLimit({ uid: 'cl_beta', capacity: '100.00', outstanding: '50.00' })]);
  });

  it("answers a write with A's key to B's limit with 404 and writes nothing", async () => {
    for (const kind of ['drawdown', 'repayment'] as const) {
      const response = await postEntry(app(), kind, 'cl_beta', { amount: '1' }, { authorization: alpha.authorization, idempotencyKey: `cross-${kind}` });
      expect(response.statusCode).toBe(404);
      expect(json(response)).toMatchObject({ code: 'not_found' });
      expect(response.body).not.toMatch(/outstanding|balance|capacity/);
    }
    expect(await ledgerState(store(), beta.org.id, 'cl_beta')).toEqual({ outstanding: '50.00', entries: 0 });
    const [keys] = await store().query<{ n: string }>('SELECT count(*)::text AS n FROM idempotency_keys WHERE org_id IN ($1, $2)', [alpha.org.id, beta.org.id]);
    expect(keys?.n).toBe('0');
  });

  it("lets A's write key read nothing of B", async () => {
    expect((await app().inject({ url: '/api/limits/cl_beta/', headers: { authorization: alpha.authorization } })).statusCode).toBe(404);
    const page = json<{ count: number }>(await app().inject({ url: '/api/limits/', headers: { authorization: alpha.authorization } }));
    expect(page.count).toBe(0);
  });
});
