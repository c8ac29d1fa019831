import { beforeAll, expect, it } from 'vitest';
import { json, useApp } from '../../helpers/app.js';
import { creditLimit, insertCreditLimits } from '../../helpers/records.js';
import { describeEachStore } from '../../helpers/stores.js';
import { createTenant, type Tenant } from '../../helpers/tenants.js';
import { ledgerState, postEntry } from '../../helpers/writes.js';

interface Problem {
  code: string;
  status: number;
  errors?: { param: string; detail: string }[];
}

describeEachStore('write body validation', (store) => {
  const app = useApp(store);
  let writer: Tenant;
  const uid = 'cl_validation';

  beforeAll(async () => {
    writer = await createTenant(store(), 'Writer', 'write');
    await insertCreditLimits(store(), writer.org.id, [creditLimit({ uid, capacity: '1000.00' })]);
  });

  const post = (body: unknown, contentType?: string) =>
    postEntry(app(), 'drawdown', uid, body, { authorization: writer.authorization, ...(contentType ? { contentType } : {}) });

  it('names every invalid member at once in a 422 invalid_body', async () => {
    const response = await post({ amount: '1.001', at: 'yesterday', reference: '', colour: 'red' });
    expect(response.statusCode).toBe(422);
    const problem = json<Problem>(response);
    expect(problem.code).toBe('invalid_body');
    expect(problem.errors?.map((error) => error.param).sort()).toEqual(['amount', 'at', 'colour', 'reference']);
    expect(problem.errors?.find((error) => error.param === 'amount')?.detail).toMatch(/at most 2 decimal places/);
  });

  it.each([
    ['a missing amount', {}, 'amount', /required/],
    ['a zero amount', { amount: '0' }, 'amount', /greater than 0/],
    ['a negative amount', { amount: -5 }, 'amount', /greater than 0/],
    ['three decimals as a JSON number', '{"amount": 1.005}', 'amount', /2 decimal places/],
    ['an amount too large for the ledger', { amount: '10000000000000' }, 'amount', /less than/],
    ['an amount of the wrong type', { amount: true }, 'amount', /got a boolean/],
    ['an amount that is not a number', { amount: '12abc' }, 'amount', /decimal number/],
    ['an `at` in the future', { amount: '1', at: '2999-01-01T00:00:00Z' }, 'at', /in the future/],
    ['an `at` with no offset', { amount: '1', at: '2024-05-01T10:00:00' }, 'at', /with an offset/],
    ['a bare date as `at`', { amount: '1', at: '2024-05-01' }, 'at', /RFC 3339/],
    ['an impossible date as `at`', { amount: '1', at: '2024-02-30T10:00:00Z' }, 'at', /RFC 3339/],
    ['an `at` of the wrong type', { amount: '1', at: 1714557600 }, 'at', /got a number/],
    ['a reference over 255 characters', { amount: '1', reference: 'r'.repeat(256) }, 'reference', /1–255/],
    ['a reference with a control character', { amount: '1', reference: 'a\u0000b' }, 'reference', /control characters/],
    ['a null reference', { amount: '1', reference: null }, 'reference', /got null/],
    ['a reference with a lone surrogate', '{"amount": "1", "reference": "loan-\\ud800"}', 'reference', /well-formed Unicode/],
    ['a reference with a lone low surrogate', '{"amount": "1", "reference": "\\udc00x"}', 'reference', /well-formed Unicode/],
    ['an unknown member', { amount: '1', id: 'dd_mine' }, 'id', /not a member/],
    ['an array body', [1], 'body', /JSON object/],
  ])('refuses %s with 422 naming it, writing nothing', async (_name, body, param, detail) => {
    const response = await post(body);
    expect(response.statusCode).toBe(422);
    const problem = json<Problem>(response);
    expect(problem.code).toBe('invalid_body');
    expect(problem.errors).toEqual([{ param, detail: expect.stringMatching(detail) }]);
    expect(await ledgerState(store(), writer.org.id, uid)).toEqual({ outstanding: '0.00', entries: 0 });
  });

  it('refuses malformed JSON and a duplicated member with 400 invalid_json', async () => {
    for (const body of ['{"amount": ', '{"amount": "1", "amount": "2"}', 'amount=1']) {
      const response = await post(body);
      expect(response.statusCode, body).toBe(400);
      expect(json<Problem>(response).code).toBe('invalid_json');
    }
  });

  it('refuses bytes that are not UTF-8 with 400 invalid_json, storing nothing with a replacement character', async () => {
    const latin1 = Buffer.concat([Buffer.from('{"amount": "1", "reference": "caf'), Buffer.from([0xe9]), Buffer.from('"}')]);
    const response = await post(latin1);
    expect(response.statusCode).toBe(400);
    expect(json<Problem & { detail: string }>(response)).toMatchObject({ code: 'invalid_json', detail: expect.stringContaining('not valid UTF-8') });
    expect(await ledgerState(store(), writer.org.id, uid)).toEqual({ outstanding: '0.00', entries: 0 });
    // The same text in UTF-8 is recorded as sent.
    const utf8 = await post(Buffer.from('{"amount": "1", "reference": "café"}'));
    expect(utf8.statusCode).toBe(201);
    expect(json<{ entry: { reference: string } }>(utf8).entry.reference).toBe('café');
    await postEntry(app(), 'repayment', uid, { amount: '1' }, { authorization: writer.authorization });
  });

  it('refuses a body declared in a charset other than UTF-8 with 415', async () => {
    for (const contentType of ['application/json; charset=iso-8859-1', 'application/json;charset="UTF-16"']) {
      const response = await post({ amount: '1' }, contentType);
      expect(response.statusCode, contentType).toBe(415);
      expect(json<Problem & { detail: string }>(response).detail).toMatch(/UTF-8/);
    }
    expect((await post({ amount: '1' }, 'application/json; charset=UTF-8')).statusCode).toBe(201);
    await postEntry(app(), 'repayment', uid, { amount: '1' }, { authorization: writer.authorization });
  });

  it('refuses a body that is not JSON with 415 unsupported_media_type', async () => {
    for (const contentType of ['text/plain', 'application/x-www-form-urlencoded', 'application/xml']) {
      const response = await post({ amount: '1' }, contentType);
      expect(response.statusCode, contentType).toBe(415);
      expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(json<Problem & { detail: string }>(response)).toMatchObject({ code: 'unsupported_media_type', detail: 'send the body as application/json (UTF-8)' });
    }
    expect((await post({ amount: '1' }, 'application/json; charset=utf-8')).statusCode).toBe(201);
  });

  it('refuses a body over 4 KiB with 413 payload_too_large', async () => {
    const response = await post({ amount: '1', reference: 'r'.repeat(4100) });
    expect(response.statusCode).toBe(413);
    expect(json<Problem & { detail: string }>(response)).toMatchObject({ code: 'payload_too_large', detail: 'the body is larger than the 4096 bytes a write may send' });
  });

  it('accepts `at` with nanoseconds and an offset (rounded to the microsecond) and a 255-character reference', async () => {
    const response = await postEntry(
      app(),
      'repayment',
      uid,
      { amount: '1.00', at: '2024-05-01T10:00:00.123456789-05:00', reference: 'é'.repeat(255) },
      { authorization: writer.authorization },
    );
    expect(response.statusCode).toBe(201);
    expect(json<{ entry: { at: string } }>(response).entry.at).toBe('2024-05-01T15:00:00.123457Z');
  });
});
