import { describe, expect, it } from 'vitest';
import type { Store, TransactionOptions } from '../../../src/store/store.js';
import { buildApp, json, useApp } from '../../helpers/app.js';
import { creditLimit, insertCreditLimits } from '../../helpers/records.js';
import { describeEachStore } from '../../helpers/stores.js';
import { createTenant } from '../../helpers/tenants.js';
import { ledgerState, postEntry, useWriter } from '../../helpers/writes.js';

describeEachStore('POST /api/limits/{uid}/drawdowns/ and /repayments/', (store) => {
  const app = useApp(store);
  const { writer, newLimit } = useWriter(store);

  it('records a drawdown and answers 201 with the entry and the limit after it', async () => {
    const uid = await newLimit();
    const response = await postEntry(app(), 'drawdown', uid, { amount: '250.50', reference: 'loan-17' }, { authorization: writer().authorization });
    expect(response.statusCode).toBe(201);
    expect(response.headers['content-type']).toMatch(/^application\/json/);
    const body = json<{ entry: Record<string, unknown>; limit: Record<string, unknown> }>(response);
    expect(body.entry).toMatchObject({ kind: 'drawdown', amount: 250.5, reference: 'loan-17', key_id: writer().keyId });
    expect(body.entry.id).toMatch(/^dd_[0-9a-f]{32}$/);
    expect(body.entry.at).toBe(body.entry.created_at);
    expect(body.limit).toMatchObject({ uid, capacity: 1000, outstanding: 250.5, balance: 749.5 });
    // The limit exactly as GET shows it now, byte for byte (members in the same order).
    const fetched = await app().inject({ url: `/api/limits/${uid}/`, headers: { authorization: writer().authorization } });
    expect(JSON.stringify(body.limit)).toBe(fetched.body);
    const [stored] = await store().query<{ key_id: string; reference: string }>('SELECT key_id, reference FROM ledger_entries WHERE org_id = $1 AND id = $2', [
      writer().org.id,
      body.entry.id,
    ]);
    expect(stored).toEqual({ key_id: writer().keyId, reference: 'loan-17' });
  });

  it('records a repayment, accepts a JSON number amount exactly and an `at` in the past', async () => {
    const uid = await newLimit('1000.00', '500.00');
    const response = await postEntry(app(), 'repayment', uid, '{"amount": 0.10, "at": "2024-05-01T10:00:00+02:00"}', { authorization: writer().authorization });
    expect(response.statusCode).toBe(201);
    const body = json<{ entry: Record<string, unknown>; limit: Record<string, unknown> }>(response);
    expect(body.entry).toMatchObject({ kind: 'repayment', amount: 0.1, at: '2024-05-01T08:00:00.000000Z', reference: null });
    expect(body.entry.id).toMatch(/^rp_/);
    expect(body.limit).toMatchObject({ outstanding: 499.9, balance: 500.1 });
  });

  it('records each write in a transaction that waits for the synchronous standby (synchronous_commit remote_apply)', async () => {
    const asked: (TransactionOptions | undefined)[] = [];
    const watched = Object.create(store()) as Store;
    watched.transaction = (fn, options) => {
      asked.push(options);
      return store().transaction(fn, options);
    };
    const watchedApp = await buildApp({ store: watched });
    try {
      const uid = await newLimit();
      const response = await postEntry(watchedApp, 'drawdown', uid, { amount: '1' }, { authorization: writer().authorization });
      expect(response.statusCode).toBe(201);
    } finally {
      await watchedApp.close();
    }
    expect(asked).toEqual([{ synchronousCommit: 'remote_apply' }]);
  });

  it('refuses a drawdown over the balance with 409 insufficient_balance and writes nothing', async () => {
    const uid = await newLimit('100.00', '50.00');
    const response = await postEntry(app(), 'drawdown', uid, { amount: '50.01' }, { authorization: writer().authorization });
    expect(response.statusCode).toBe(409);
    expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(json(response)).toMatchObject({ code: 'insufficient_balance', status: 409 });
    expect(await ledgerState(store(), writer().org.id, uid)).toEqual({ outstanding: '50.00', entries: 0 });
  });

  it('refuses a repayment over the outstanding amount with 409 repayment_exceeds_outstanding', async () => {
    const uid = await newLimit('100.00', '50.00');
    const response = await postEntry(app(), 'repayment', uid, { amount: 50.01 }, { authorization: writer().authorization });
    expect(response.statusCode).toBe(409);
    expect(json(response)).toMatchObject({ code: 'repayment_exceeds_outstanding' });
    expect(await ledgerState(store(), writer().org.id, uid)).toEqual({ outstanding: '50.00', entries: 0 });
  });

  it('answers 404 for an unknown limit and stores nothing, so the key is free for a retry', async () => {
    const response = await postEntry(app(), 'drawdown', 'cl_nope', { amount: '1' }, { authorization: writer().authorization, idempotencyKey: 'unknown-limit' });
    expect(response.statusCode).toBe(404);
    expect(json(response)).toMatchObject({ code: 'not_found' });
    const [row] = await store().query<{ n: string }>("SELECT count(*)::text AS n FROM idempotency_keys WHERE org_id = $1 AND idempotency_key = 'unknown-limit'", [writer().org.id]);
    expect(row?.n).toBe('0');
  });

  it('moves the limit updated_at forward to the time of the write, whatever `at` says', async () => {
    const uid = await newLimit();
    const response = await postEntry(app(), 'drawdown', uid, { amount: '1', at: '2020-01-01T00:00:00Z' }, { authorization: writer().authorization });
    const body = json<{ entry: { created_at: string }; limit: { updated_at: string } }>(response);
    expect(body.limit.updated_at >= body.entry.created_at).toBe(true);
    expect(body.limit.updated_at > '2024-05-02T08:00:00.000000Z').toBe(true);
  });

  describe('scopes', () => {
    it('refuses a read key with 403 insufficient_scope before reading anything', async () => {
      const reader = await createTenant(store(), 'Reader');
      await insertCreditLimits(store(), reader.org.id, [creditLimit({ uid: 'cl_reader' })]);
      const response = await postEntry(app(), 'drawdown', 'cl_reader', { amount: '1' }, { authorization: reader.authorization });
      expect(response.statusCode).toBe(403);
      expect(json(response)).toMatchObject({ code: 'insufficient_scope', status: 403 });
      expect(await ledgerState(store(), reader.org.id, 'cl_reader')).toEqual({ outstanding: '0.00', entries: 0 });
      // A read key still reads.
      expect((await app().inject({ url: '/api/limits/cl_reader/', headers: { authorization: reader.authorization } })).statusCode).toBe(200);
    });

    it('answers 401 without credentials', async () => {
      const response = await postEntry(app(), 'drawdown', 'cl_x', { amount: '1' }, { authorization: '' });
      expect(response.statusCode).toBe(401);
      expect(response.headers['www-authenticate']).toMatch(/^Basic/);
    });
  });

  it('answers GET on a write path with 405 and Allow: POST', async () => {
    const uid = await newLimit();
    for (const kind of ['drawdowns', 'repayments']) {
      const response = await app().inject({ url: `/api/limits/${uid}/${kind}/`, headers: { authorization: writer().authorization } });
      expect(response.statusCode).toBe(405);
      expect(response.headers.allow).toBe('POST');
      expect(json(response)).toMatchObject({ code: 'method_not_allowed' });
    }
  });
});
