import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Queryable, Store } from '../../src/store/store.js';
import { buildApp } from '../helpers/app.js';
import { exchangeUntilClosed, responsesIn } from '../helpers/pipelined-exchange.js';
import { rawRequest, type RawResponse } from '../helpers/raw-http.js';
import { openPgliteTestStore } from '../helpers/stores.js';
import { createTenant, type Tenant } from '../helpers/tenants.js';

/** The store, with its queries held while `held` is set: a request stays in flight until the test lets it go. */
function holdingStore(store: Store) {
  let release: (() => void) | undefined;
  let held: Promise<void> | undefined;
  let waiting = 0;
  const query: Queryable['query'] = async (sql, params, options) => {
    if (held) {
      waiting += 1;
      await held;
    }
    return store.query(sql, params, options);
  };
  const holding = new Proxy(store, {
    get: (target, property) => (property === 'query' ? query : (Reflect.get(target, property, target) as unknown)),
  });
  return {
    store: holding as Store,
    hold: () => (held = new Promise<void>((resolve) => (release = resolve))),
    waiting: () => waiting,
    release: () => {
      held = undefined;
      release?.();
    },
  };
}

describe('a request that arrives while the node closes', () => {
  let store: Store;
  let tenant: Tenant;

  beforeAll(async () => {
    store = await openPgliteTestStore();
    tenant = await createTenant(store, 'Closing');
  });
  afterAll(async () => {
    await store.close();
  });

  const expectShutdownProblem = (answer: RawResponse | undefined) => {
    expect(answer?.status).toBe(503);
    expect(answer?.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(answer?.headers['retry-after']).toBe('1');
    expect(answer?.headers.connection).toBe('close');
    expect(answer?.headers['x-request-id']).toBeTruthy();
    const problem = JSON.parse(answer?.body ?? '{}') as { code?: string; detail?: string };
    expect(problem.code).toBe('service_unavailable');
    expect(problem.detail).toMatch(/shutting down/);
  };

  it('gets a 503 problem naming the shutdown, with Retry-After and Connection: close, and the request in flight its answer', async () => {
    const holding = holdingStore(store);
    const app = await buildApp({ store: holding.store });
    // The close waits here after it has begun (the port still open): a connection accepted then is answered.
    let endPause: () => void = () => {};
    const paused = new Promise<void>((resolve) => (endPause = resolve));
    let pausing: () => void = () => {};
    const closeBegun = new Promise<void>((resolve) => (pausing = resolve));
    app.addHook('preClose', async () => {
      pausing();
      await paused;
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = app.server.address() as { port: number };
    holding.hold();
    // A list whose queries are held, and a liveness probe pipelined behind it on the same connection.
    const exchange = exchangeUntilClosed(
      port,
      `GET /api/methods/ HTTP/1.1\r\nHost: x\r\nAuthorization: ${tenant.authorization}\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n`,
    );
    for (let i = 0; i < 500 && holding.waiting() === 0; i += 1) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(holding.waiting()).toBeGreaterThan(0);
    const closed = app.close();
    await closeBegun;
    // A new connection in the moment between the close's start and the port's.
    expectShutdownProblem(await rawRequest(port, 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n'));
    endPause();
    holding.release();
    const [list, probe] = responsesIn(await exchange);
    await closed;
    expect(list?.status).toBe(200);
    expectShutdownProblem(probe);
  });
});
