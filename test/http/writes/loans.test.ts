import { beforeAll, expect, it } from 'vitest';
import type { Loan, Problem } from '../../../packages/client/src/generated.js';
import { json, useApp } from '../../helpers/app.js';
import { postLoanWrite } from '../../helpers/loans.js';
import { creditLimit, insertCreditLimits, insertPaymentMethods, paymentMethod } from '../../helpers/records.js';
import { describeEachStore } from '../../helpers/stores.js';
import { createTenant, type Tenant } from '../../helpers/tenants.js';
import { dumpAllTables } from '../../helpers/import-lines.js';

describeEachStore('POST /api/loans/ and /api/loans/{uid}/repayments/', (store) => {
  const app = useApp(store);
  let writer: Tenant;
  let reader: Tenant;
  let other: Tenant;

  beforeAll(async () => {
    writer = await createTenant(store(), 'Writer', 'write');
    reader = await createTenant(store(), 'Reader');
    other = await createTenant(store(), 'Other', 'write');
    await insertCreditLimits(store(), writer.org.id, [
      creditLimit({ uid: 'cl_usd', entity: 'ent_1', currency: 'USD', capacity: '1000.00' }),
      creditLimit({ uid: 'cl_small', entity: 'ent_1', currency: 'USD', capacity: '100.00', outstanding: '90.00' }),
    ]);
    await insertPaymentMethods(store(), writer.org.id, [
      paymentMethod({ uid: 'pm_usd', entity: 'ent_1', currency: 'USD' }),
      paymentMethod({ uid: 'pm_eur', entity: 'ent_1', currency: 'EUR' }),
      paymentMethod({ uid: 'pm_ent2', entity: 'ent_2', currency: 'USD' }),
    ]);
    await insertCreditLimits(store(), other.org.id, [creditLimit({ uid: 'cl_theirs', entity: 'ent_1', currency: 'USD' })]);
    await insertPaymentMethods(store(), other.org.id, [paymentMethod({ uid: 'pm_theirs', entity: 'ent_1', currency: 'USD' })]);
  });

  const create = (body: unknown, idempotencyKey?: string) =>
    postLoanWrite(app(), undefined, body, { authorization: writer.authorization, ...(idempotencyKey ? { idempotencyKey } : {}) });
  const repay = (loan: string, body: unknown, idempotencyKey?: string) =>
    postLoanWrite(app(), loan, body, { authorization: writer.authorization, ...(idempotencyKey ? { idempotencyKey } : {}) });
  const get = (url: string) => app().inject({ url, headers: { authorization: writer.authorization } });

  it('creates the loan and draws its principal on the limit, in one answer; a retry with the key replays it', async () => {
    const body = { credit_limit: 'cl_usd', payment_method: 'pm_usd', principal: '250.50', reference: 'ext-1' };
    const response = await create(body, 'loan-key-1');
    expect(response.statusCode, response.body).toBe(201);
    const answer = json<{ loan: Loan; limit: Record<string, unknown> }>(response);
    expect(answer.loan).toMatchObject({
      uid: expect.stringMatching(/^ln_[0-9a-f]{32}$/),
      entity: 'ent_1',
      credit_limit: 'cl_usd',
      payment_method: 'pm_usd',
      currency: 'USD',
      principal: 250.5,
      outstanding: 250.5,
      status: 'active',
      reference: 'ext-1',
    });
    expect(answer.limit).toMatchObject({ uid: 'cl_usd', outstanding: 250.5, balance: 749.5 });
    expect(json(await get(`/api/loans/${answer.loan.uid}/`))).toEqual(answer.loan);
    const entries = json<{ items: Record<string, unknown>[] }>(await get('/api/limits/cl_usd/entries/'));
    expect(entries.items).toEqual([expect.objectContaining({ kind: 'drawdown', amount: 250.5, loan: answer.loan.uid, reference: 'ext-1' })]);

    const replay = await create(body, 'loan-key-1');
    expect(replay.statusCode).toBe(201);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.body).toBe(response.body);
    expect(json<{ count: number }>(await get('/api/loans/')).count).toBe(1);
    const reused = await create({ ...body, principal: '1.00' }, 'loan-key-1');
    expect(json<Problem>(reused).code).toBe('idempotency_key_reused');
  });

  it('repays a loan: loan and limit outstanding fall together; the repayment to zero makes it repaid; more is a 409', async () => {
    const created = json<{ loan: Loan }>(await create({ credit_limit: 'cl_usd', payment_method: 'pm_usd', principal: '100.00' })).loan;
    const limitBefore = json<{ outstanding: number }>(await get('/api/limits/cl_usd/')).outstanding;
    const first = await repay(created.uid, { amount: '40.00', reference: 'rp-1' });
    expect(first.statusCode, first.body).toBe(201);
    expect(json(first)).toMatchObject({
      entry: { kind: 'repayment', amount: 40, loan: created.uid, reference: 'rp-1' },
      loan: { uid: created.uid, outstanding: 60, status: 'active' },
      limit: { uid: 'cl_usd', outstanding: limitBefore - 40 },
    });
    const tooMuch = await repay(created.uid, { amount: '60.01' });
    expect(tooMuch.statusCode).toBe(409);
    expect(json<Problem>(tooMuch)).toMatchObject({ code: 'repayment_exceeds_outstanding', detail: expect.stringContaining(`loan ${created.uid} (outstanding 60.00)`) });
    const last = await repay(created.uid, { amount: 60 });
    expect(json(last)).toMatchObject({ loan: { outstanding: 0, status: 'repaid' }, limit: { outstanding: limitBefore - 100 } });
    expect(json<{ items: Loan[] }>(await get('/api/loans/?status=repaid')).items.map((loan) => loan.uid)).toContain(created.uid);
    expect((await repay(created.uid, { amount: '0.01' })).statusCode).toBe(409);
  });

  it('refuses a principal over the balance with 409 insufficient_balance, writing nothing; a retry replays the 409', async () => {
    const before = await dumpAllTables(store());
    const response = await create({ credit_limit: 'cl_small', payment_method: 'pm_usd', principal: '10.01' }, 'loan-key-409');
    expect(response.statusCode).toBe(409);
    expect(json<Problem>(response)).toMatchObject({ code: 'insufficient_balance', detail: expect.stringContaining('balance 10.00') });
    const replay = await create({ credit_limit: 'cl_small', payment_method: 'pm_usd', principal: '10.01' }, 'loan-key-409');
    expect(replay.statusCode).toBe(409);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    // Only the key's stored refusal was added.
    const after = await dumpAllTables(store());
    expect(after.replace(/\nidempotency_keys:[\s\S]*?\n(?=[a-z_]+:\n)/, '')).toBe(before.replace(/\nidempotency_keys:[\s\S]*?\n(?=[a-z_]+:\n)/, ''));
  });

  it('refuses a method of another entity or currency with 422 naming payment_method, and an unknown one with 404', async () => {
    const entity = await create({ credit_limit: 'cl_usd', payment_method: 'pm_ent2', principal: '1.00' });
    expect(entity.statusCode).toBe(422);
    expect(json<Problem>(entity).errors).toEqual([{ param: 'payment_method', detail: expect.stringContaining("belongs to entity 'ent_2'") }]);
    const currency = await create({ credit_limit: 'cl_usd', payment_method: 'pm_eur', principal: '1.00' });
    expect(currency.statusCode).toBe(422);
    expect(json<Problem>(currency).errors).toEqual([{ param: 'payment_method', detail: expect.stringContaining('is in EUR') }]);
    const unknown = await create({ credit_limit: 'cl_none', payment_method: 'pm_usd', principal: '1.00' });
    expect(unknown.statusCode).toBe(404);
    expect(json<Problem>(unknown).detail).toContain("no credit limit 'cl_none'");
    expect((await repay('ln_none', { amount: '1.00' })).statusCode).toBe(404);
  });

  it("never lends on another organization's limit or to its method: 404, never a loan", async () => {
    const before = await dumpAllTables(store());
    for (const body of [
      { credit_limit: 'cl_theirs', payment_method: 'pm_usd', principal: '1.00' },
      { credit_limit: 'cl_usd', payment_method: 'pm_theirs', principal: '1.00' },
      { credit_limit: 'cl_theirs', payment_method: 'pm_theirs', principal: '1.00' },
    ]) {
      const response = await create(body);
      expect(response.statusCode, JSON.stringify(body)).toBe(404);
      expect(response.body).not.toContain('ent_1');
    }
    const theirs = json<{ loan: Loan }>(
      await postLoanWrite(app(), undefined, { credit_limit: 'cl_theirs', payment_method: 'pm_theirs', principal: '5.00' }, { authorization: other.authorization }),
    ).loan;
    expect((await repay(theirs.uid, { amount: '1.00' })).statusCode).toBe(404);
    expect((await get(`/api/loans/${theirs.uid}/`)).statusCode).toBe(404);
    expect(json<{ items: Loan[] }>(await get('/api/loans/')).items.map((loan) => loan.uid)).not.toContain(theirs.uid);
    const after = await dumpAllTables(store());
    // The only rows added are the other organization's loan, entry and limit change, and its key.
    expect(after.split('\n').filter((line) => line.includes('cl_usd') || line.includes('pm_usd')).sort()).toEqual(
      before.split('\n').filter((line) => line.includes('cl_usd') || line.includes('pm_usd')).sort(),
    );
  });

  it('validates the body (every invalid member at once) and needs a write key', async () => {
    const response = await create({ credit_limit: 7, principal: '1.001', colour: 'red' });
    expect(response.statusCode).toBe(422);
    expect(json<Problem>(response).errors?.map((error) => error.param).sort()).toEqual(['colour', 'credit_limit', 'payment_method', 'principal']);
    const read = await postLoanWrite(app(), undefined, { credit_limit: 'cl_usd', payment_method: 'pm_usd', principal: '1' }, { authorization: reader.authorization });
    expect(read.statusCode).toBe(403);
  });
});
