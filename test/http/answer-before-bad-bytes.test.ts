import { randomUUID } from 'node:crypto';
import type { FastifyInstance, RouteOptions } from 'fastify';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { EVENT_STREAM_PATH } from '../../src/http/event-stream-routes.js';
import { buildApp } from '../helpers/app.js';
import { expectProblemWithIdAndHeaders } from '../helpers/answer-checks.js';
import { exchangeUntilClosed } from '../helpers/pipelined-exchange.js';
import { parseRawResponse, type RawResponse } from '../helpers/raw-http.js';
import { creditLimit, insertCreditLimits, insertPaymentMethods, paymentMethod } from '../helpers/records.js';
import { describeEachStore } from '../helpers/stores.js';
import { createTenant, type Tenant } from '../helpers/tenants.js';
import { ledgerState } from '../helpers/writes.js';

/** The responses in `text`, in order; the first one has no body when it answers a HEAD. */
function responsesIn(text: string, firstIsHead: boolean): RawResponse[] {
  const responses: RawResponse[] = [];
  let rest = text;
  for (let i = 0; i < 10 && rest.length > 0; i += 1) {
    const response = parseRawResponse(rest);
    const headEnd = rest.indexOf('\r\n\r\n') + 4;
    const bodyLength = i === 0 && firstIsHead ? 0 : Number(response.headers['content-length'] ?? 0);
    responses.push(i === 0 && firstIsHead ? { ...response, body: '' } : response);
    rest = rest.slice(headEnd + bodyLength);
  }
  return responses;
}

// What follows a request on its connection: a stray space, and a pipelined request Node cannot parse.
const STRAY_BYTES = [' ', 'FOO /api/limits/ HTTP/1.1\r\nHost: x\r\n\r\n'];

describeEachStore('a request already being handled is answered before bad bytes after it on the connection', (store) => {
  const routes: RouteOptions[] = [];
  let app: FastifyInstance;
  let port: number;
  let writer: Tenant;
  const uidFor = new Map<string, string>();

  beforeAll(async () => {
    writer = await createTenant(store(), 'Writer', 'write');
    const limit = creditLimit({ capacity: '1000000.00', outstanding: '0.00' });
    const method = paymentMethod();
    await insertCreditLimits(store(), writer.org.id, [limit]);
    await insertPaymentMethods(store(), writer.org.id, [method]);
    uidFor.set('limits', limit.uid).set('methods', method.uid);
    app = await buildApp({ store: store(), onRoute: (route) => void routes.push(route) });
    // A loan to repay on the loan repayment route.
    const lent = await app.inject({
      method: 'POST',
      url: '/api/loans/',
      headers: { authorization: writer.authorization, 'idempotency-key': randomUUID(), 'content-type': 'application/json' },
      payload: { credit_limit: limit.uid, payment_method: method.uid, principal: '100.00' },
    });
    expect(lent.statusCode).toBe(201);
    uidFor.set('loans', (lent.json() as { loan: { uid: string } }).loan.uid);
    await app.listen({ port: 0, host: '127.0.0.1' });
    port = (app.server.address() as { port: number }).port;
  });
  afterAll(async () => {
    await app?.close();
  });

  /** A concrete URL for a route: a record of this tenant's for `:uid` (by the collection it is under). */
  const concrete = (url: string) =>
    url.replace(/\/api\/(\w+)\/:uid/, (_whole, collection: string) => `/api/${collection}/${uidFor.get(collection) ?? 'x1'}`).replace(/\*/g, 'index.html');

  async function entriesWithId(entryId: string): Promise<number> {
    const [row] = await store().query<{ count: string }>(`SELECT count(*)::text AS count FROM ledger_entries WHERE org_id = $1 AND id = $2`, [writer.org.id, entryId]);
    return Number(row?.count ?? 0);
  }

  it('delivers every route’s own answer, then 400 for the bad bytes, then closes', async () => {
    const served = routes.filter((route) => !route.config?.answersMethodNotAllowed).flatMap((route) => [route.method].flat().map((method) => ({ method, url: concrete(route.url) })));
    // The ledger's writes (the webhook endpoints' and an event's resend have tests of their own); drawdowns before
    // repayments: each repayment has a drawdown to repay.
    const writes = served.filter((route) => route.method === 'POST' && /^\/api\/(limits|loans)\//.test(route.url)).sort((a, b) => a.url.localeCompare(b.url));
    // An event stream's answer never ends, so nothing after it is answered (test/events/event-stream-connection.test.ts).
    const reads = served.filter((route) => (route.method === 'GET' || route.method === 'HEAD') && route.url !== EVENT_STREAM_PATH);
    // The SPEC's write and read paths must be among them.
    expect(writes.map((route) => route.url).sort()).toEqual([
      `/api/limits/${uidFor.get('limits')}/drawdowns/`,
      `/api/limits/${uidFor.get('limits')}/repayments/`,
      '/api/loans/',
      `/api/loans/${uidFor.get('loans')}/repayments/`,
    ]);
    expect(reads.map((route) => route.url)).toEqual(expect.arrayContaining(['/healthz', '/readyz', '/api/limits/', `/api/methods/${uidFor.get('methods')}/`]));

    for (const stray of STRAY_BYTES) {
      for (const { method, url } of writes) {
        const idempotencyKey = randomUUID();
        const before = await ledgerState(store(), writer.org.id, uidFor.get('limits') ?? '');
        const body = JSON.stringify(url === '/api/loans/' ? { credit_limit: uidFor.get('limits'), payment_method: uidFor.get('methods'), principal: '1.00' } : { amount: '1.00' });
        const request =
          `${method} ${url} HTTP/1.1\r\nHost: x\r\nAuthorization: ${writer.authorization}\r\nIdempotency-Key: ${idempotencyKey}\r\n` +
          `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
        const [answer, rejection, ...more] = responsesIn(await exchangeUntilClosed(port, request + stray), false);
        const what = `${method} ${url} followed by ${JSON.stringify(stray)}`;
        expect(answer?.status, what).toBe(201);
        const answered = JSON.parse(answer?.body ?? '{}') as { entry?: { id: string; amount: number }; loan?: { principal: number } };
        expectProblemWithIdAndHeaders(rejection ?? { status: 0, headers: {}, body: '' }, 400);
        expect(rejection?.headers.connection, what).toBe('close');
        expect(more, what).toEqual([]);
        // Recorded exactly once: the client has its 201 and has no reason to send it again.
        if (url === '/api/loans/') expect(answered.loan?.principal, what).toBe(1);
        else {
          expect(answered.entry?.amount, what).toBe(1);
          expect(await entriesWithId(answered.entry?.id ?? ''), what).toBe(1);
        }
        expect((await ledgerState(store(), writer.org.id, uidFor.get('limits') ?? '')).entries, what).toBe(before.entries + 1);
      }
      for (const { method, url } of reads) {
        const request = `${method} ${url} HTTP/1.1\r\nHost: x\r\nAuthorization: ${writer.authorization}\r\n\r\n`;
        const [alone] = responsesIn(await exchangeUntilClosed(port, request.replace('\r\n\r\n', '\r\nConnection: close\r\n\r\n')), method === 'HEAD');
        const [answer, rejection, ...more] = responsesIn(await exchangeUntilClosed(port, request + stray), method === 'HEAD');
        const what = `${method} ${url} followed by ${JSON.stringify(stray)}`;
        // The route's own answer, as it is without the bad bytes.
        expect(alone?.status, what).not.toBe(400);
        expect(answer?.status, what).toBe(alone?.status);
        if (/^\/api\/(limits|methods)\//.test(url)) expect(answer?.status, what).toBe(200);
        expect(answer?.headers['x-request-id'], what).not.toBe(rejection?.headers['x-request-id']);
        expect(rejection?.status, what).toBe(400);
        expect(rejection?.headers.connection, what).toBe('close');
        expect(more, what).toEqual([]);
      }
    }
  });
  it('answers a request once when its own framing is bad after its headers were answered (found by the hostile-input property)', async () => {
    for (const method of ['HEAD', 'GET']) {
      // A repeated Host is refused (400) as soon as the headers are read; the bad Transfer-Encoding fails the body after that.
      const request = `${method} /api/methods/ HTTP/1.1\r\nHost: api.example.com\r\nConnection: close\r\nHost: ' OR '1'='1\r\nTransfer-Encoding: ' OR '1'='1\r\n\r\n`;
      const [answer, ...more] = responsesIn(await exchangeUntilClosed(port, request), method === 'HEAD');
      expect(answer?.status, method).toBe(400);
      if (method === 'GET') expect(answer ? JSON.parse(answer.body) : undefined, method).toMatchObject({ code: 'bad_request' });
      expect(more, method).toEqual([]);
    }
  });
});
