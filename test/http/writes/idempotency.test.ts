import { expect, it } from 'vitest';
import { pruneIdempotencyKeys } from '../../../src/ledger/idempotency-keys.js';
import { json, useApp } from '../../helpers/app.js';
import { creditLimit, insertCreditLimits } from '../../helpers/records.js';
import { describeEachStore } from '../../helpers/stores.js';
import { createTenant } from '../../helpers/tenants.js';
import { ledgerState, postEntry, useWriter } from '../../helpers/writes.js';

describeEachStore('Idempotency-Key on writes', (store) => {
  const app = useApp(store);
  const { writer, newLimit } = useWriter(store);

  it('replays the first response for the same key and body, with Idempotent-Replayed, writing once', async () => {
    const uid = await newLimit();
    const first = await postEntry(app(), 'drawdown', uid, { amount: '100' }, { authorization: writer().authorization, idempotencyKey: 'k-replay' });
    expect(first.statusCode).toBe(201);
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    // The same request written differently (number vs string, trailing zeros) is the same request.
    const again = await postEntry(app(), 'drawdown', uid, '{"amount": 100.00}', { authorization: writer().authorization, idempotencyKey: 'k-replay' });
    expect(again.statusCode).toBe(201);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body).toBe(first.body);
    expect(await ledgerState(store(), writer().org.id, uid)).toEqual({ outstanding: '100.00', entries: 1 });
  });

  it('replays byte for byte a response whose text holds quotes, backslashes and non-ASCII (stored with the COMMIT as a quoted literal)', async () => {
    const uid = await newLimit();
    const reference = String.raw`O'Brien \'; "loan" \n \x27 E'\' — ünïcode ✓ $1 $$`;
    const key = String.raw`k-quote'\"`;
    const first = await postEntry(app(), 'drawdown', uid, { amount: '1', reference }, { authorization: writer().authorization, idempotencyKey: key });
    expect(first.statusCode).toBe(201);
    expect(json<{ entry: { reference: string } }>(first).entry.reference).toBe(reference);
    const again = await postEntry(app(), 'drawdown', uid, { amount: '1', reference }, { authorization: writer().authorization, idempotencyKey: key });
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body).toBe(first.body);
    expect(await ledgerState(store(), writer().org.id, uid)).toEqual({ outstanding: '1.00', entries: 1 });
  });

  it('replays a stored 409 refusal even after the balance would allow the write', async () => {
    const uid = await newLimit('100.00', '100.00');
    const refused = await postEntry(app(), 'drawdown', uid, { amount: '10' }, { authorization: writer().authorization, idempotencyKey: 'k-refused' });
    expect(refused.statusCode).toBe(409);
    await postEntry(app(), 'repayment', uid, { amount: '50' }, { authorization: writer().authorization });
    const retried = await postEntry(app(), 'drawdown', uid, { amount: '10' }, { authorization: writer().authorization, idempotencyKey: 'k-refused' });
    expect(retried.statusCode).toBe(409);
    expect(retried.headers['idempotent-replayed']).toBe('true');
    expect(retried.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(retried.body).toBe(refused.body);
    expect(await ledgerState(store(), writer().org.id, uid)).toEqual({ outstanding: '50.00', entries: 1 });
  });

  it('stores a refusal as its code, detail and first request_id, and still replays one the previous release stored as text', async () => {
    const uid = await newLimit('100.00', '100.00');
    const key = 'k-previous-release';
    const refused = await postEntry(app(), 'drawdown', uid, { amount: '10' }, { authorization: writer().authorization, idempotencyKey: key });
    expect(refused.statusCode).toBe(409);
    const problem = json<{ code: string; detail: string; request_id: string }>(refused);
    const storedAnswer = async () =>
      (
        await store().query<{ body: string | null; row: unknown }>('SELECT response_body AS body, response_row AS row FROM idempotency_keys WHERE org_id = $1 AND idempotency_key = $2', [
          writer().org.id,
          key,
        ])
      )[0];
    expect(await storedAnswer()).toEqual({ body: null, row: { code: 'insufficient_balance', detail: problem.detail, request_id: problem.request_id } });

    // The previous release stored the problem document's text; its answers live 24 h after a deploy and replay as stored.
    const previous = JSON.stringify({ ...problem, request_id: 'req-of-the-previous-release' });
    await store().query('UPDATE idempotency_keys SET response_body = $3, response_row = NULL WHERE org_id = $1 AND idempotency_key = $2', [writer().org.id, key, previous]);
    const replay = await postEntry(app(), 'drawdown', uid, { amount: '10' }, { authorization: writer().authorization, idempotencyKey: key });
    expect(replay.statusCode).toBe(409);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(replay.body).toBe(previous);
  });

  it('answers 422 idempotency_key_reused for the same key with another body, limit or kind', async () => {
    const uid = await newLimit();
    const other = await newLimit();
    await postEntry(app(), 'drawdown', uid, { amount: '5' }, { authorization: writer().authorization, idempotencyKey: 'k-reused' });
    for (const [kind, target, body] of [
      ['drawdown', uid, { amount: '6' }],
      ['drawdown', uid, { amount: '5', reference: 'x' }],
      ['drawdown', other, { amount: '5' }],
      ['repayment', uid, { amount: '5' }],
    ] as const) {
      const response = await postEntry(app(), kind, target, body, { authorization: writer().authorization, idempotencyKey: 'k-reused' });
      expect(response.statusCode, JSON.stringify([kind, target, body])).toBe(422);
      expect(json(response)).toMatchObject({ code: 'idempotency_key_reused' });
    }
    expect(await ledgerState(store(), writer().org.id, uid)).toEqual({ outstanding: '5.00', entries: 1 });
    expect(await ledgerState(store(), writer().org.id, other)).toEqual({ outstanding: '0.00', entries: 0 });
  });

  it('scopes keys to the organization: another organization may use the same key', async () => {
    const uid = await newLimit();
    const other = await createTenant(store(), 'Other', 'write');
    await insertCreditLimits(store(), other.org.id, [creditLimit({ uid })]);
    const mine = await postEntry(app(), 'drawdown', uid, { amount: '1' }, { authorization: writer().authorization, idempotencyKey: 'k-shared' });
    const theirs = await postEntry(app(), 'drawdown', uid, { amount: '2' }, { authorization: other.authorization, idempotencyKey: 'k-shared' });
    expect([mine.statusCode, theirs.statusCode]).toEqual([201, 201]);
    expect(theirs.headers['idempotent-replayed']).toBeUndefined();
    expect(await ledgerState(store(), other.org.id, uid)).toEqual({ outstanding: '2.00', entries: 1 });
  });

  it('requires the header: 400 idempotency_key_missing when absent or empty, idempotency_key_invalid when too long or not printable', async () => {
    const uid = await newLimit();
    for (const idempotencyKey of [null, '', '   ']) {
      const response = await postEntry(app(), 'drawdown', uid, { amount: '1' }, { authorization: writer().authorization, idempotencyKey });
      expect(response.statusCode).toBe(400);
      expect(json(response)).toMatchObject({ code: 'idempotency_key_missing' });
    }
    for (const idempotencyKey of ['k'.repeat(256), 'tab\there', 'caf\u00e9']) {
      const response = await postEntry(app(), 'drawdown', uid, { amount: '1' }, { authorization: writer().authorization, idempotencyKey });
      expect(response.statusCode).toBe(400);
      expect(json(response)).toMatchObject({ code: 'idempotency_key_invalid' });
    }
    const longest = await postEntry(app(), 'drawdown', uid, { amount: '1' }, { authorization: writer().authorization, idempotencyKey: 'k'.repeat(255) });
    expect(longest.statusCode).toBe(201);
    expect(await ledgerState(store(), writer().org.id, uid)).toEqual({ outstanding: '1.00', entries: 1 });
  });

  it('does not store a validation failure: the corrected request with the same key runs', async () => {
    const uid = await newLimit();
    const invalid = await postEntry(app(), 'drawdown', uid, { amount: '1.001' }, { authorization: writer().authorization, idempotencyKey: 'k-fixed' });
    expect(invalid.statusCode).toBe(422);
    const fixed = await postEntry(app(), 'drawdown', uid, { amount: '1.00' }, { authorization: writer().authorization, idempotencyKey: 'k-fixed' });
    expect(fixed.statusCode).toBe(201);
    expect(fixed.headers['idempotent-replayed']).toBeUndefined();
  });

  it('runs concurrent requests with one key once: every answer is the first one', async () => {
    const uid = await newLimit();
    const answers = await Promise.all(
      Array.from({ length: 20 }, () => postEntry(app(), 'drawdown', uid, { amount: '7' }, { authorization: writer().authorization, idempotencyKey: 'k-concurrent' })),
    );
    expect(answers.map((answer) => answer.statusCode)).toEqual(Array(20).fill(201));
    expect(new Set(answers.map((answer) => answer.body)).size).toBe(1);
    expect(answers.filter((answer) => answer.headers['idempotent-replayed'] === 'true')).toHaveLength(19);
    expect(await ledgerState(store(), writer().org.id, uid)).toEqual({ outstanding: '7.00', entries: 1 });
  });

  it('treats an expired key as absent, and prune deletes expired keys only', async () => {
    const uid = await newLimit();
    await postEntry(app(), 'drawdown', uid, { amount: '3' }, { authorization: writer().authorization, idempotencyKey: 'k-expired' });
    await postEntry(app(), 'drawdown', uid, { amount: '4' }, { authorization: writer().authorization, idempotencyKey: 'k-live' });
    await store().query(`UPDATE idempotency_keys SET expires_at = now() - interval '1 second' WHERE org_id = $1 AND idempotency_key = 'k-expired'`, [writer().org.id]);
    // Expired: the same key runs again, even with another body.
    const rerun = await postEntry(app(), 'drawdown', uid, { amount: '5' }, { authorization: writer().authorization, idempotencyKey: 'k-expired' });
    expect(rerun.statusCode).toBe(201);
    expect(rerun.headers['idempotent-replayed']).toBeUndefined();
    expect(await ledgerState(store(), writer().org.id, uid)).toEqual({ outstanding: '12.00', entries: 3 });

    await store().query(`UPDATE idempotency_keys SET expires_at = now() - interval '1 second' WHERE org_id = $1 AND idempotency_key = 'k-expired'`, [writer().org.id]);
    expect(await pruneIdempotencyKeys(store())).toBeGreaterThanOrEqual(1);
    const left = await store().query<{ idempotency_key: string }>(
      `SELECT idempotency_key FROM idempotency_keys WHERE org_id = $1 AND idempotency_key IN ('k-expired', 'k-live') ORDER BY 1`,
      [writer().org.id],
    );
    expect(left.map((row) => row.idempotency_key)).toEqual(['k-live']);
  });

  it('stores the key expiry IDEMPOTENCY_KEY_TTL_HOURS ahead (24 h by default)', async () => {
    const uid = await newLimit();
    await postEntry(app(), 'drawdown', uid, { amount: '1' }, { authorization: writer().authorization, idempotencyKey: 'k-ttl' });
    const [row] = await store().query<{ hours: string }>(
      `SELECT round(extract(epoch FROM expires_at - created_at) / 3600)::text AS hours FROM idempotency_keys WHERE org_id = $1 AND idempotency_key = 'k-ttl'`,
      [writer().org.id],
    );
    expect(row?.hours).toBe('24');
  });
});
