import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, expect, expectTypeOf, it } from 'vitest';
import { buildApp } from '../helpers/app.js';
import { LendingApiError, LendingClient, type CreditLimit, type FetchFunction, type LedgerWriteResult, type RetryEvent } from '../../packages/client/src/index.js';
import { creditLimit, insertCreditLimits } from '../helpers/records.js';
import { describeEachStore } from '../helpers/stores.js';
import { createTenant, type Tenant } from '../helpers/tenants.js';
import { injectFetch } from '../helpers/inject-fetch.js';

const BASE_URL = 'http://lending.test:8080';

// The SDK's writes against the real routes and store: what reaches the
// server, what it records, and what the caller sees when an answer is lost.
describeEachStore('LendingClient creditLimits.draw / repay', (store) => {
  let app: FastifyInstance;
  let writer: Tenant;
  let limitCounter = 0;

  /** A fresh limit of `capacity`, nothing drawn. */
  const freshLimit = async (capacity = '1000.00') => {
    limitCounter += 1;
    const uid = `cl_sdkw_${limitCounter}`;
    await insertCreditLimits(store(), writer.org.id, [creditLimit({ uid, capacity, outstanding: '0.00' })]);
    return uid;
  };
  const entriesOf = (uid: string) =>
    store().query<{ kind: string; amount: string; key_id: string | null }>(
      `SELECT e.kind, e.amount::text AS amount, e.key_id FROM ledger_entries e JOIN credit_limits l ON l.id = e.limit_id AND l.org_id = e.org_id
        WHERE l.uid = $1 AND l.org_id = $2 ORDER BY e.recorded_at`,
      [uid, writer.org.id],
    );

  /**
   * The real app behind a `fetch` whose first `lose` answers never reach the
   * client: the request is served (and recorded) and then the caller gets
   * `lost()` instead — a dropped connection, or a gateway's 503.
   */
  const losingFetch = (lose: number, lost: () => Promise<Response>) => {
    const real = injectFetch(app);
    let calls = 0;
    const fetch: FetchFunction = async (input, init) => {
      calls += 1;
      const answer = await real(input, init);
      return calls <= lose ? lost() : answer;
    };
    return Object.assign(fetch, { requests: real.requests });
  };
  const clientWith = (fetch: FetchFunction, apiKey = writer.apiKey, onRetry?: (event: RetryEvent) => void) =>
    new LendingClient({ baseUrl: BASE_URL, organizationId: writer.org.uid, apiKey, fetch, sleep: async () => {}, onRetry });

  beforeAll(async () => {
    app = await buildApp({ store: store() });
    writer = await createTenant(store(), 'SDK writer', 'write');
  });
  afterAll(async () => {
    await app.close();
  });

  it('draws and repays, answering the entry and the limit after it', async () => {
    const uid = await freshLimit('1000.00');
    const client = clientWith(injectFetch(app));
    const drawn = await client.creditLimits.draw(uid, { amount: '250.10', reference: 'loan-1' });
    expectTypeOf(drawn).toEqualTypeOf<LedgerWriteResult>();
    expectTypeOf(drawn.limit).toEqualTypeOf<CreditLimit>();
    expect(drawn.entry).toMatchObject({ kind: 'drawdown', amount: 250.1, reference: 'loan-1', key_id: writer.keyId });
    expect(drawn.limit).toMatchObject({ uid, outstanding: 250.1, balance: 749.9 });
    const repaid = await client.creditLimits.repay(uid, { amount: '50.10' });
    expect(repaid.entry).toMatchObject({ kind: 'repayment', amount: 50.1, reference: null });
    expect(repaid.limit).toMatchObject({ outstanding: 200, balance: 800 });
    expect(await client.creditLimits.retrieve(uid)).toMatchObject({ outstanding: 200, balance: 800 });
  });

  it('retries a drawdown whose connection dropped after the server recorded it, with the same key: written once', async () => {
    const uid = await freshLimit('1000.00');
    const fetch = losingFetch(1, () => Promise.reject(new TypeError('fetch failed')));
    const events: RetryEvent[] = [];
    const result = await clientWith(fetch, writer.apiKey, (event) => events.push(event)).creditLimits.draw(uid, { amount: '100.00' });
    const keys = fetch.requests.map((request) => request.headers['idempotency-key']);
    expect(keys).toHaveLength(2);
    expect(keys[1]).toBe(keys[0]);
    expect(events.map((event) => event.idempotencyKey)).toEqual([keys[0]]);
    expect(result.limit).toMatchObject({ outstanding: 100, balance: 900 });
    expect(await entriesOf(uid)).toEqual([{ kind: 'drawdown', amount: '100.00', key_id: writer.keyId }]);
  });

  it('retries a drawdown answered 503 after the server recorded it, with the same key: written once', async () => {
    const uid = await freshLimit('1000.00');
    const unavailable = () =>
      Promise.resolve(
        new Response(JSON.stringify({ type: 'about:blank', title: 'Service unavailable', status: 503, detail: 'upstream went away', code: 'service_unavailable' }), {
          status: 503,
          headers: { 'content-type': 'application/problem+json', 'retry-after': '1' },
        }),
      );
    // Two answers lost: three attempts, one key, one entry.
    const fetch = losingFetch(2, unavailable);
    const draw = await clientWith(fetch).creditLimits.draw(uid, { amount: '300.00' });
    expect(new Set(fetch.requests.map((request) => request.headers['idempotency-key'])).size).toBe(1);
    expect(fetch.requests).toHaveLength(3);
    expect(draw.limit).toMatchObject({ outstanding: 300, balance: 700 });
    expect(await entriesOf(uid)).toEqual([{ kind: 'drawdown', amount: '300.00', key_id: writer.keyId }]);
  });

  it('sends one key per logical call: two calls with the same body draw twice', async () => {
    const uid = await freshLimit('1000.00');
    const client = clientWith(injectFetch(app));
    await client.creditLimits.draw(uid, { amount: '10.00' });
    const second = await client.creditLimits.draw(uid, { amount: '10.00' });
    expect(second.limit).toMatchObject({ outstanding: 20 });
  });

  it('replays a caller’s own key across clients: the same loan is drawn once', async () => {
    const uid = await freshLimit('1000.00');
    const first = await clientWith(injectFetch(app)).creditLimits.draw(uid, { amount: '42.00' }, { idempotencyKey: `loan-${uid}` });
    const again = await clientWith(injectFetch(app)).creditLimits.draw(uid, { amount: '42.00' }, { idempotencyKey: `loan-${uid}` });
    expect(again).toEqual(first);
    const reused = await clientWith(injectFetch(app))
      .creditLimits.draw(uid, { amount: '43.00' }, { idempotencyKey: `loan-${uid}` })
      .catch((error: unknown) => error);
    expect(reused).toBeInstanceOf(LendingApiError);
    expect(reused).toMatchObject({ status: 422, code: 'idempotency_key_reused' });
    expect(await entriesOf(uid)).toHaveLength(1);
  });

  it('throws insufficient_balance without retrying, and nothing is written', async () => {
    const uid = await freshLimit('100.00');
    const fetch = injectFetch(app);
    const error = await clientWith(fetch).creditLimits.draw(uid, { amount: '100.01' }).catch((caught: unknown) => caught);
    expect(error).toMatchObject({ status: 409, code: 'insufficient_balance' });
    expect(fetch.requests).toHaveLength(1);
    expect(await entriesOf(uid)).toEqual([]);
  });

  it('throws insufficient_scope for a read key', async () => {
    const uid = await freshLimit();
    const reader = await createTenant(store(), 'SDK reader');
    const client = new LendingClient({ baseUrl: BASE_URL, organizationId: reader.org.uid, apiKey: reader.apiKey, fetch: injectFetch(app) });
    const readerLimit = `cl_sdkr_${limitCounter}`;
    await insertCreditLimits(store(), reader.org.id, [creditLimit({ uid: readerLimit })]);
    await expect(client.creditLimits.draw(readerLimit, { amount: '1.00' })).rejects.toMatchObject({ status: 403, code: 'insufficient_scope' });
    // And another organization's limit does not exist for the writer.
    await expect(clientWith(injectFetch(app)).creditLimits.draw(readerLimit, { amount: '1.00' })).rejects.toMatchObject({ status: 404, code: 'not_found' });
    expect(await entriesOf(uid)).toEqual([]);
  });

  it('reports every invalid body field of a 422 in errors', async () => {
    const uid = await freshLimit();
    const error = (await clientWith(injectFetch(app))
      .creditLimits.draw(uid, { amount: '1.234', at: '2999-01-01T00:00:00Z' })
      .catch((caught: unknown) => caught)) as LendingApiError;
    expect(error).toMatchObject({ status: 422, code: 'invalid_body' });
    expect(error.errors.map((item) => item.param).sort()).toEqual(['amount', 'at']);
  });
});
