import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { buildApp } from '../helpers/app.js';
import { expectProblemWithIdAndHeaders } from '../helpers/answer-checks.js';
import { rawRequestText } from '../helpers/pipelined-exchange.js';
import { rawRequest, type RawResponse } from '../helpers/raw-http.js';
import { creditLimit, insertCreditLimits, insertPaymentMethods, paymentMethod } from '../helpers/records.js';
import { describeEachStore } from '../helpers/stores.js';
import { createTenant, type Tenant } from '../helpers/tenants.js';

interface WriteRoute {
  readonly path: string;
  /** A body the route accepts, as JSON text. */
  readonly body: string;
  /** The same body with its amount member given twice (equal values). */
  readonly repeated: string;
  /** The same again, the second time spelled with a `\u` escape. */
  readonly repeatedEscaped: string;
}

/** How a write is framed on the wire — its members, its Content-Type, its Transfer-Encoding — on every write route. */
describeEachStore('a write’s framing is read one way only', (store) => {
  let app: FastifyInstance;
  let port: number;
  let writer: Tenant;
  let routes: WriteRoute[];

  beforeAll(async () => {
    writer = await createTenant(store(), 'Framing writer', 'write');
    const limit = creditLimit({ capacity: '1000000.00', outstanding: '0.00' });
    const method = paymentMethod();
    await insertCreditLimits(store(), writer.org.id, [limit]);
    await insertPaymentMethods(store(), writer.org.id, [method]);
    app = await buildApp({ store: store() });
    await app.listen({ port: 0, host: '127.0.0.1' });
    port = (app.server.address() as { port: number }).port;
    const loanBody = { credit_limit: limit.uid, payment_method: method.uid };
    const lent = await send('/api/loans/', [['Content-Type', 'application/json']], JSON.stringify({ ...loanBody, principal: '100.00' }));
    expect(lent.status).toBe(201);
    const loan = (JSON.parse(lent.body) as { loan: { uid: string } }).loan.uid;
    const entry = { body: '{"amount": "1.00"}', repeated: '{"amount": "1.00", "amount": "1.00"}', repeatedEscaped: '{"amount": "1.00", "\\u0061mount": "1.00"}' };
    const loanPrefix = `{"credit_limit": "${limit.uid}", "payment_method": "${method.uid}", "principal": "1.00", `;
    routes = [
      { path: `/api/limits/${limit.uid}/drawdowns/`, ...entry },
      { path: `/api/limits/${limit.uid}/repayments/`, ...entry },
      {
        path: '/api/loans/',
        body: JSON.stringify({ ...loanBody, principal: '1.00' }),
        repeated: `${loanPrefix}"principal": "1.00"}`,
        repeatedEscaped: `${loanPrefix}"\\u0070rincipal": "1.00"}`,
      },
      { path: `/api/loans/${loan}/repayments/`, ...entry },
    ];
    // A repayment needs an outstanding amount to repay.
    expect((await send(routes[0]?.path ?? '', [['Content-Type', 'application/json']], '{"amount": "100.00"}')).status).toBe(201);
  });
  afterAll(async () => {
    await app?.close();
  });

  /** Sends one write on its own connection, with the writer's credentials, a fresh Idempotency-Key and `headers`. */
  function send(path: string, headers: readonly (readonly [string, string])[], body: string, version = '1.1'): Promise<RawResponse> {
    const usual: [string, string][] = [
      ['Host', 'api.example.com'],
      ['Authorization', writer.authorization],
      ['Idempotency-Key', randomUUID()],
      ['Connection', 'close'],
    ];
    return rawRequest(port, rawRequestText(`POST ${path} HTTP/${version}`, [...usual, ...headers], body));
  }

  /** Everything a write could change for the writer's organization. */
  async function written(): Promise<string> {
    const [row] = await store().query<{ state: string }>(
      `SELECT concat_ws(' ',
         (SELECT count(*) FROM ledger_entries WHERE org_id = $1),
         (SELECT count(*) FROM loans WHERE org_id = $1),
         (SELECT sum(outstanding) FROM loans WHERE org_id = $1),
         (SELECT count(*) FROM idempotency_keys WHERE org_id = $1)) AS state`,
      [writer.org.id],
    );
    return row?.state ?? '';
  }

  const chunked = (text: string) => `${Buffer.byteLength(text).toString(16)}\r\n${text}\r\n0\r\n\r\n`;

  async function expectRefused(what: string, answer: RawResponse, status: number, code: string, detail: RegExp): Promise<void> {
    expectProblemWithIdAndHeaders(answer, status);
    const problem = JSON.parse(answer.body) as { code: string; detail: string };
    expect(problem.code, what).toBe(code);
    expect(problem.detail, what).toMatch(detail);
  }

  it('refuses a member given twice, even with the same value, as 400 invalid_json, and writes nothing', async () => {
    for (const route of routes) {
      const before = await written();
      const twice = await send(route.path, [['Content-Type', 'application/json']], route.repeated);
      await expectRefused(route.path, twice, 400, 'invalid_json', /"(amount|principal)" .*twice/);
      // The same member spelled with an escape is the same member.
      const escaped = await send(route.path, [['Content-Type', 'application/json']], route.repeatedEscaped);
      await expectRefused(route.path, escaped, 400, 'invalid_json', /twice/);
      expect(await written(), route.path).toBe(before);
    }
  });

  it('refuses a transfer coding other than chunked as 415 unsupported_media_type, and writes nothing', async () => {
    for (const route of routes) {
      const before = await written();
      for (const codings of [[['Transfer-Encoding', 'gzip, chunked']], [['Transfer-Encoding', 'gzip'], ['Transfer-Encoding', 'chunked']], [['Transfer-Encoding', 'identity, chunked']]] as const) {
        const answer = await send(route.path, [['Content-Type', 'application/json'], ...codings], chunked(route.body));
        await expectRefused(`${route.path} ${JSON.stringify(codings)}`, answer, 415, 'unsupported_media_type', /Transfer-Encoding/);
      }
      expect(await written(), route.path).toBe(before);
    }
    // chunked alone is framing, not a coding of the body.
    expect((await send(routes[0]?.path ?? '', [['Content-Type', 'application/json'], ['Transfer-Encoding', 'chunked']], chunked(routes[0]?.body ?? ''))).status).toBe(201);
  });

  it('refuses Transfer-Encoding on an HTTP/1.0 request as 400 bad_request, closes the connection, and writes nothing', async () => {
    for (const route of routes) {
      const before = await written();
      const answer = await send(route.path, [['Content-Type', 'application/json'], ['Transfer-Encoding', 'chunked']], chunked(route.body), '1.0');
      await expectRefused(route.path, answer, 400, 'bad_request', /HTTP\/1\.0.*Transfer-Encoding|Transfer-Encoding.*HTTP\/1\.0/);
      expect(answer.headers.connection, route.path).toBe('close');
      expect(await written(), route.path).toBe(before);
    }
    // Framed by its length, an HTTP/1.0 write is recorded.
    expect((await send(routes[0]?.path ?? '', [['Content-Type', 'application/json']], routes[0]?.body ?? '', '1.0')).status).toBe(201);
  });

  it('refuses a Content-Type with a parameter given twice as 415 unsupported_media_type, and writes nothing', async () => {
    for (const route of routes) {
      const before = await written();
      for (const contentType of ['application/json; charset=UTF-8; charset=latin1', 'application/json; charset=utf-8; charset=utf-8', 'application/json;charset=utf-8;CHARSET="utf-8"']) {
        const answer = await send(route.path, [['Content-Type', contentType]], route.body);
        await expectRefused(`${route.path} ${contentType}`, answer, 415, 'unsupported_media_type', /charset.*twice/);
      }
      expect(await written(), route.path).toBe(before);
    }
    expect((await send(routes[0]?.path ?? '', [['Content-Type', 'application/json; charset="UTF-8"']], routes[0]?.body ?? '')).status).toBe(201);
  });
});
