import { describe, expect, it } from 'vitest';
import openapi from '../../openapi.json' with { type: 'json' };
import { LendingApiError, LendingClient, ResourceClient, type FetchFunction, type RetryEvent } from '../../packages/client/src/index.js';

// The client against stand-in servers (a `fetch` written here): cursor walks,
// timeouts, cancellation and retry reports, without a store.
const BASE_URL = 'http://lending.test';
const credentials = { baseUrl: BASE_URL, organizationId: 'org_1', apiKey: 'lak_1' };

interface Call {
  url: URL;
  method: string;
  headers: Record<string, string>;
  body: string | undefined;
  signal: AbortSignal | undefined;
}

/** A fetch answering from `answer`, recording each call. */
function fakeFetch(answer: (url: URL, call: number) => Response | Promise<Response>): FetchFunction & { calls: Call[] } {
  const calls: Call[] = [];
  const fetch: FetchFunction = async (input, init) => {
    const url = new URL(input);
    calls.push({ url, method: init.method, headers: init.headers, body: init.body, signal: init.signal });
    return answer(url, calls.length);
  };
  return Object.assign(fetch, { calls });
}

const json = (body: unknown, status = 200, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...headers } });

const problem = (status: number, code: string, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify({ type: 'about:blank', title: code, status, detail: code, code, request_id: `req-${code}` }), {
    status,
    headers: { 'content-type': 'application/problem+json', ...headers },
  });

/**
 * The cursor contract (docs/api.md): an empty `cursor=` starts at the first
 * row, `next` carries `cursor=<opaque>` and the filters, null at the end;
 * `page` with `cursor` is a 422.
 */
function cursorServer(records: { uid: string }[], pageSize = 3) {
  return fakeFetch((url) => {
    if (url.searchParams.has('page') && url.searchParams.has('cursor')) return problem(422, 'invalid_parameter');
    const cursor = url.searchParams.get('cursor');
    if (cursor === null) return problem(422, 'invalid_parameter');
    const start = cursor === '' ? 0 : Number(atob(cursor));
    const items = records.slice(start, start + pageSize);
    const after = start + items.length;
    const next = new URL(url);
    next.host = 'internal.example:9999';
    next.searchParams.set('cursor', btoa(String(after)));
    return json({ count: records.length, next: after < records.length ? next.toString() : null, previous: null, items });
  });
}

describe('listAll', () => {
  const records = Array.from({ length: 8 }, (_, i) => ({ uid: `pm_${i}` }));

  it('starts a cursor walk with an empty cursor and the filters, then follows next until it is null', async () => {
    const fetch = cursorServer(records);
    const client = new LendingClient({ ...credentials, fetch });
    const uids: string[] = [];
    for await (const method of client.paymentMethods.listAll({ entity: 'ent_1', order_by: 'updated_at' })) uids.push(method.uid);
    expect(uids).toEqual(records.map((record) => record.uid));
    expect(fetch.calls.map((call) => call.url.search)).toEqual([
      '?entity=ent_1&order_by=updated_at&cursor=',
      `?entity=ent_1&order_by=updated_at&cursor=${encodeURIComponent(btoa('3'))}`,
      `?entity=ent_1&order_by=updated_at&cursor=${encodeURIComponent(btoa('6'))}`,
    ]);
    // Links name the server's own host; credentials still go only to the base URL.
    expect(fetch.calls.every((call) => call.url.origin === BASE_URL && call.url.pathname === '/api/methods/')).toBe(true);
  });

  it('never sends page beside cursor, even from an untyped caller', async () => {
    const fetch = cursorServer(records);
    const client = new LendingClient({ ...credentials, fetch });
    const params = { entity: 'ent_1', page: 2 } as unknown as { entity: string };
    const uids: string[] = [];
    for await (const method of client.paymentMethods.listAll(params)) uids.push(method.uid);
    expect(uids).toHaveLength(8);
    expect(fetch.calls[0]?.url.search).toBe('?entity=ent_1&cursor=');
  });

  it('yields nothing for an empty result, after one request', async () => {
    const fetch = cursorServer([]);
    const client = new LendingClient({ ...credentials, fetch });
    const all = [];
    for await (const limit of client.creditLimits.listAll()) all.push(limit);
    expect(all).toEqual([]);
    expect(fetch.calls.map((call) => call.url.pathname + call.url.search)).toEqual(['/api/limits/?cursor=']);
  });

  it('stops between pages when its signal aborts', async () => {
    const fetch = cursorServer(records);
    const controller = new AbortController();
    const client = new LendingClient({ ...credentials, fetch });
    const seen: string[] = [];
    const walk = async () => {
      for await (const method of client.paymentMethods.listAll({}, { signal: controller.signal })) {
        seen.push(method.uid);
        if (seen.length === 4) controller.abort(new Error('enough'));
      }
    };
    await expect(walk()).rejects.toThrow('enough');
    expect(seen).toHaveLength(4);
    expect(fetch.calls).toHaveLength(2);
  });
});

describe('timeouts and cancellation', () => {
  // A server that never answers and ignores the signal: the client must not wait for it.
  const silent = () => fakeFetch(() => new Promise<Response>(() => {}));

  it('fails a request that takes longer than timeoutMs with a TimeoutError, and aborts its fetch', async () => {
    const fetch = silent();
    const client = new LendingClient({ ...credentials, fetch, timeoutMs: 20 });
    const error = (await client.paymentMethods.retrieve('pm_1').catch((caught: unknown) => caught)) as DOMException;
    expect(error.name).toBe('TimeoutError');
    expect(error.message).toContain(`${BASE_URL}/api/methods/pm_1/`);
    expect(fetch.calls[0]?.signal?.aborted).toBe(true);
  });

  it('takes a per-call timeout over the client’s', async () => {
    const client = new LendingClient({ ...credentials, fetch: silent(), timeoutMs: 0 });
    await expect(client.creditLimits.list({}, { timeoutMs: 20 })).rejects.toMatchObject({ name: 'TimeoutError' });
  });

  it('rejects with the caller’s reason when its signal aborts a request in flight', async () => {
    const fetch = silent();
    const client = new LendingClient({ ...credentials, fetch, timeoutMs: 0 });
    const controller = new AbortController();
    const pending = client.paymentMethods.list({}, { signal: controller.signal });
    controller.abort(new Error('user navigated away'));
    await expect(pending).rejects.toThrow('user navigated away');
    expect(fetch.calls[0]?.signal?.aborted).toBe(true);
  });

  it('does not send a request when the signal has already aborted', async () => {
    const fetch = silent();
    const client = new LendingClient({ ...credentials, fetch });
    await expect(client.paymentMethods.list({}, { signal: AbortSignal.abort(new Error('too late')) })).rejects.toThrow('too late');
    expect(fetch.calls).toHaveLength(0);
  });

  it('stops waiting between retries when the signal aborts, with no further request', async () => {
    const fetch = fakeFetch(() => problem(503, 'service_unavailable', { 'retry-after': '5' }));
    const controller = new AbortController();
    const client = new LendingClient({ ...credentials, fetch, onRetry: () => controller.abort(new Error('cancelled while waiting')) });
    await expect(client.paymentMethods.list({}, { signal: controller.signal })).rejects.toThrow('cancelled while waiting');
    expect(fetch.calls).toHaveLength(1);
  });
});

describe('onRetry', () => {
  it('reports each retry — attempt, wait and the answer — before waiting', async () => {
    const fetch = fakeFetch((_url, call) => (call === 1 ? problem(429, 'rate_limited', { 'retry-after': '7' }) : call === 2 ? problem(503, 'service_unavailable', { 'retry-after': '1' }) : json({ uid: 'pm_1' })));
    const events: RetryEvent[] = [];
    const order: string[] = [];
    const client = new LendingClient({
      ...credentials,
      fetch,
      onRetry: (event) => {
        events.push(event);
        order.push(`retry ${event.attempt}`);
      },
      sleep: async (ms) => {
        order.push(`sleep ${ms}`);
      },
    });
    expect(await client.paymentMethods.retrieve('pm_1')).toEqual({ uid: 'pm_1' });
    expect(events.map(({ attempt, delayMs, error, method, url, idempotencyKey }) => ({ attempt, delayMs, code: (error as LendingApiError).code, method, url, idempotencyKey }))).toEqual([
      { attempt: 1, delayMs: 7000, code: 'rate_limited', method: 'GET', url: `${BASE_URL}/api/methods/pm_1/`, idempotencyKey: undefined },
      { attempt: 2, delayMs: 1000, code: 'service_unavailable', method: 'GET', url: `${BASE_URL}/api/methods/pm_1/`, idempotencyKey: undefined },
    ]);
    expect(events[0]?.error).toBeInstanceOf(LendingApiError);
    expect(order).toEqual(['retry 1', 'sleep 7000', 'retry 2', 'sleep 1000']);
  });

  it('is not called for an answer that is not retried', async () => {
    const onRetry = (): void => {
      throw new Error('must not be called');
    };
    const client = new LendingClient({ ...credentials, fetch: fakeFetch(() => problem(404, 'not_found')), onRetry });
    await expect(client.paymentMethods.retrieve('pm_x')).rejects.toMatchObject({ status: 404, code: 'not_found' });
  });
});

describe('collections from the OpenAPI document', () => {
  const listOperations = Object.entries(openapi.paths as Record<string, { get?: { operationId: string } }>).filter(([, item]) =>
    item.get?.operationId.startsWith('list'),
  );

  it('gives LendingClient a ResourceClient for every list operation, requesting that operation’s path', async () => {
    expect(listOperations.length).toBeGreaterThanOrEqual(2);
    const fetch = fakeFetch(() => json({ count: 0, next: null, previous: null, items: [] }));
    const client = new LendingClient({ ...credentials, fetch }) as unknown as Record<string, ResourceClient>;
    const nested = listOperations.filter(([path]) => path.includes('{uid}'));
    for (const [path, item] of listOperations.filter(([path]) => !path.includes('{uid}'))) {
      const plural = item.get!.operationId.slice('list'.length);
      const property = plural.charAt(0).toLowerCase() + plural.slice(1);
      expect(client[property], property).toBeInstanceOf(ResourceClient);
      await client[property]!.list();
      expect(fetch.calls.at(-1)?.url.pathname, property).toBe(path);
    }
    // A nested list (`/api/limits/{uid}/entries/`) is reached through its parent's client: `creditLimits.entries(uid)`.
    expect(nested.length).toBeGreaterThanOrEqual(1);
    for (const [path] of nested) {
      const [, , parentPath, , child] = path.split('/') as [string, string, string, string, string];
      const parent = Object.values(client).find((candidate) => candidate instanceof ResourceClient && (candidate as unknown as { collectionPath: string }).collectionPath === `/api/${parentPath}/`);
      const listOf = (parent as unknown as Record<string, (uid: string) => ResourceClient> | undefined)?.[child];
      expect(listOf, `${parentPath}.${child}(uid)`).toBeTypeOf('function');
      await listOf!.call(parent, 'uid_1').list();
      expect(fetch.calls.at(-1)?.url.pathname, path).toBe(path.replace('{uid}', 'uid_1'));
    }
  });

  it('lets ResourceClient reach a collection on its own, from plain options', async () => {
    const fetch = fakeFetch((url) => json({ uid: url.pathname.split('/')[3], name: 'Acme' }));
    const entities = new ResourceClient<{ uid: string; name: string }>({ ...credentials, fetch }, 'entities');
    expect(await entities.retrieve('ent_1')).toEqual({ uid: 'ent_1', name: 'Acme' });
    expect(fetch.calls[0]?.url.pathname).toBe('/api/entities/ent_1/');
    expect(() => new ResourceClient(credentials, '../admin')).toThrow(TypeError);
  });
});

describe('creditLimits.draw and repay', () => {
  const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
  const created = (kind = 'drawdown') =>
    json({ entry: { id: 'dd_1', kind, limit: 'cl_1', amount: 100, at: '2025-01-01T00:00:00.000000Z', reference: null, key_id: 'key_1', created_at: '2025-01-01T00:00:00.000000Z' }, limit: { uid: 'cl_1', balance: 900 } }, 201);
  const dropped = () => Promise.reject(new TypeError('fetch failed'));
  const noWait = { sleep: async () => {} };

  it('POSTs the JSON body with a generated Idempotency-Key, a new one per call', async () => {
    const fetch = fakeFetch((url) => created(url.pathname.includes('repayments') ? 'repayment' : 'drawdown'));
    const client = new LendingClient({ ...credentials, fetch });
    const result = await client.creditLimits.draw('cl_1', { amount: '100.00', reference: 'loan-7' });
    expect(result.entry).toMatchObject({ id: 'dd_1', kind: 'drawdown', amount: 100 });
    expect(result.limit.balance).toBe(900);
    await client.creditLimits.repay('cl_1', { amount: 25, at: '2025-01-01T00:00:00Z' });
    const [draw, repay] = fetch.calls;
    expect(draw).toMatchObject({ method: 'POST', body: '{"amount":"100.00","reference":"loan-7"}' });
    expect(draw?.url.pathname).toBe('/api/limits/cl_1/drawdowns/');
    expect(draw?.headers['content-type']).toBe('application/json');
    expect(draw?.headers['idempotency-key']).toMatch(UUID);
    expect(repay).toMatchObject({ method: 'POST', body: '{"amount":25,"at":"2025-01-01T00:00:00Z"}' });
    expect(repay?.url.pathname).toBe('/api/limits/cl_1/repayments/');
    expect(repay?.headers['idempotency-key']).toMatch(UUID);
    expect(repay?.headers['idempotency-key']).not.toBe(draw?.headers['idempotency-key']);
  });

  it('sends the caller’s idempotency key when given', async () => {
    const fetch = fakeFetch(() => created());
    await new LendingClient({ ...credentials, fetch }).creditLimits.draw('cl_1', { amount: '1.00' }, { idempotencyKey: 'loan-42' });
    expect(fetch.calls[0]?.headers['idempotency-key']).toBe('loan-42');
  });

  it('retries a dropped connection and a 503 with the same key, reporting the key to onRetry', async () => {
    const fetch = fakeFetch((_url, call) => (call === 1 ? dropped() : call === 2 ? problem(503, 'service_unavailable', { 'retry-after': '1' }) : created()));
    const events: RetryEvent[] = [];
    const client = new LendingClient({ ...credentials, fetch, ...noWait, onRetry: (event) => events.push(event) });
    await client.creditLimits.draw('cl_1', { amount: '100.00' });
    const keys = fetch.calls.map((call) => call.headers['idempotency-key']);
    expect(keys).toHaveLength(3);
    expect(new Set(keys).size).toBe(1);
    expect(events.map(({ attempt, method, idempotencyKey, error }) => ({ attempt, method, idempotencyKey, failure: error.message }))).toEqual([
      { attempt: 1, method: 'POST', idempotencyKey: keys[0], failure: 'fetch failed' },
      { attempt: 2, method: 'POST', idempotencyKey: keys[0], failure: 'service_unavailable' },
    ]);
  });

  it('retries a write whose attempt timed out, with the same key', async () => {
    const fetch = fakeFetch((_url, call) => (call === 1 ? new Promise<Response>(() => {}) : created()));
    const client = new LendingClient({ ...credentials, fetch, ...noWait, timeoutMs: 20 });
    await client.creditLimits.draw('cl_1', { amount: '100.00' });
    expect(fetch.calls).toHaveLength(2);
    expect(fetch.calls[1]?.headers['idempotency-key']).toBe(fetch.calls[0]?.headers['idempotency-key']);
  });

  it('gives up after maxAttempts and throws the last failure', async () => {
    const fetch = fakeFetch(() => dropped());
    const client = new LendingClient({ ...credentials, fetch, ...noWait, retry: { maxAttempts: 3 } });
    await expect(client.creditLimits.draw('cl_1', { amount: '1.00' })).rejects.toThrow('fetch failed');
    expect(fetch.calls).toHaveLength(3);
  });

  it('never retries a 409 or any other 4xx but 429, and throws its code', async () => {
    for (const [status, code] of [
      [409, 'insufficient_balance'],
      [409, 'repayment_exceeds_outstanding'],
      [403, 'insufficient_scope'],
      [422, 'idempotency_key_reused'],
      [400, 'idempotency_key_missing'],
    ] as const) {
      const fetch = fakeFetch(() => problem(status, code));
      const client = new LendingClient({ ...credentials, fetch, ...noWait });
      await expect(client.creditLimits.draw('cl_1', { amount: '1.00' }), code).rejects.toMatchObject({ status, code });
      expect(fetch.calls, code).toHaveLength(1);
    }
  });

  it('does not retry a GET that got no answer: only a write carries a key that makes it safe', async () => {
    const fetch = fakeFetch(() => dropped());
    const client = new LendingClient({ ...credentials, fetch, ...noWait });
    await expect(client.creditLimits.retrieve('cl_1')).rejects.toThrow('fetch failed');
    expect(fetch.calls).toHaveLength(1);
  });

  it('does not retry when the caller aborts a write in flight', async () => {
    const controller = new AbortController();
    const fetch = fakeFetch(() => {
      controller.abort(new Error('caller gave up'));
      return new Promise<Response>(() => {});
    });
    const client = new LendingClient({ ...credentials, fetch, ...noWait });
    await expect(client.creditLimits.draw('cl_1', { amount: '1.00' }, { signal: controller.signal })).rejects.toThrow('caller gave up');
    expect(fetch.calls).toHaveLength(1);
  });
});
