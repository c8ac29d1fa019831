import { describe, expect, expectTypeOf, it } from 'vitest';
import {
  EventsClient,
  LendingApiError,
  LendingClient,
  WebhookEndpointsClient,
  type Event,
  type FetchFunction,
  type Page,
  type WebhookDeliveryAttempt,
  type WebhookEndpoint,
  type WebhookEndpointReplay,
  type WebhookEndpointTest,
  type WebhookEndpointWithSecret,
} from '../../packages/client/src/index.js';

// client.events and client.webhookEndpoints against a stand-in server that
// answers as SPEC §3c and docs/webhooks.md say the service does: the paths,
// methods, query strings and bodies the SDK sends, and what it makes of the
// answers.
const credentials = { baseUrl: 'http://lending.test', organizationId: 'org_1', apiKey: 'lak_1' };

interface Call {
  url: URL;
  method: string;
  headers: Record<string, string>;
  body: unknown;
}

function standIn(answer: (call: Call) => Response | Promise<Response>): FetchFunction & { calls: Call[] } {
  const calls: Call[] = [];
  const fetch: FetchFunction = async (input, init) => {
    const call = { url: new URL(input), method: init.method, headers: init.headers, body: init.body === undefined ? undefined : JSON.parse(init.body) };
    calls.push(call);
    return answer(call);
  };
  return Object.assign(fetch, { calls });
}

const json = (body: unknown, status = 200) => new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });
const problem = (status: number, code: string) =>
  new Response(JSON.stringify({ type: 'about:blank', title: code, status, detail: code, code }), { status, headers: { 'content-type': 'application/problem+json' } });

const event = (n: number): Event => ({
  id: `evt_${n}`,
  object: 'event',
  type: 'credit_limit.updated',
  created_at: `2026-11-28T03:13:08.${String(n).padStart(6, '0')}Z`,
  api_version: '2026-11-25',
  data: {
    object: { uid: 'cl_1', entity: 'ent_1', currency: 'USD', capacity: 1000, outstanding: 250, balance: 750, rate: 0.0005, created_at: '2026-11-28T03:13:08.000000Z', updated_at: '2026-11-28T03:13:08.000000Z' },
    previous_attributes: { balance: 1000 },
  },
  request_id: `req_${n}`,
  idempotency_key: `key_${n}`,
  import_id: null,
});

const endpoint: WebhookEndpoint = {
  id: 'we_1',
  object: 'webhook_endpoint',
  url: 'https://example.com/hooks',
  description: null,
  enabled_events: ['loan.*'],
  disabled: false,
  disabled_reason: null,
  created_at: '2026-11-28T03:13:08.664000Z',
  updated_at: '2026-11-28T03:13:08.664000Z',
  health: { pending: 0, last_attempt_at: null, last_success_at: null, failing_since: null, succeeded_24h: 0, failed_24h: 0, hourly_24h: [] },
};
const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';

describe('client.events', () => {
  it('lists with the filters in the query string, at /api/events/', async () => {
    const fetch = standIn(() => json({ count: 1, next: null, previous: null, items: [event(1)] }));
    const client = new LendingClient({ ...credentials, fetch });
    expect(client.events).toBeInstanceOf(EventsClient);
    const page = await client.events.list({ type: 'credit_limit.*', object: 'cl_1', created_from: '2026-11-01', created_to: '2026-11-30', order_by: 'created_at', page: 2 });
    expectTypeOf(page).toEqualTypeOf<Page<Event>>();
    expect(page.items[0]?.data.previous_attributes).toEqual({ balance: 1000 });
    const [call] = fetch.calls;
    expect(call?.method).toBe('GET');
    expect(call?.url.pathname).toBe('/api/events/');
    expect(Object.fromEntries(call!.url.searchParams)).toEqual({
      type: 'credit_limit.*',
      object: 'cl_1',
      created_from: '2026-11-01',
      created_to: '2026-11-30',
      order_by: 'created_at',
      page: '2',
    });
  });

  it('walks the log oldest first with cursors, and stops at the page whose next is null', async () => {
    const log = [1, 2, 3, 4, 5].map(event);
    const fetch = standIn(({ url }) => {
      const start = Number(url.searchParams.get('cursor') || '0');
      const next = new URL(url);
      next.searchParams.set('cursor', String(start + 2));
      return json({ count: log.length, next: start + 2 < log.length ? next.href : null, previous: null, items: log.slice(start, start + 2) });
    });
    const client = new LendingClient({ ...credentials, fetch });
    const seen: string[] = [];
    for await (const item of client.events.listAll({ order_by: 'created_at', created_from: log[0]!.created_at })) seen.push(item.id);
    expect(seen).toEqual(['evt_1', 'evt_2', 'evt_3', 'evt_4', 'evt_5']);
    expect(fetch.calls.map((call) => call.url.searchParams.get('cursor'))).toEqual(['', '2', '4']);
    expect(fetch.calls.every((call) => call.url.searchParams.get('order_by') === 'created_at')).toBe(true);
  });

  it('waits out a 429 its retries gave up on, as long as Retry-After says, within the bound the caller sets', async () => {
    const log = [1, 2, 3].map(event);
    let refusals = 0;
    const fetch = standIn(({ url }) => {
      const start = Number(url.searchParams.get('cursor') || '0');
      // The second page is refused twice (a minute's budget spent), then served.
      if (start === 2 && refusals < 2) {
        refusals += 1;
        const refused = problem(429, 'rate_limited');
        refused.headers.set('retry-after', '45');
        return refused;
      }
      const next = new URL(url);
      next.searchParams.set('cursor', String(start + 2));
      return json({ count: log.length, next: start + 2 < log.length ? next.href : null, previous: null, items: log.slice(start, start + 2) });
    });
    const waits: number[] = [];
    const sleep = async (ms: number) => void waits.push(ms);
    const walk = async (maxRateLimitWaitMs: number | undefined) => {
      refusals = 0;
      waits.length = 0;
      const seen: string[] = [];
      // retry.maxDelayMs 30 s: the client's own retries give up on a Retry-After of 45 s.
      const client = new LendingClient({ ...credentials, fetch, sleep, retry: { maxDelayMs: 30_000 } });
      for await (const item of client.events.listAll({ order_by: 'created_at' }, { maxRateLimitWaitMs })) seen.push(item.id);
      return seen;
    };
    expect(await walk(undefined)).toEqual(['evt_1', 'evt_2', 'evt_3']);
    expect(waits).toEqual([45_000, 45_000]);
    expect(await walk(90_000)).toEqual(['evt_1', 'evt_2', 'evt_3']);
    const refused = await walk(60_000).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(LendingApiError);
    expect(refused).toMatchObject({ status: 429, retryAfterSeconds: 45 });
    expect(waits).toEqual([45_000]);
    expect(await walk(0).catch((error: unknown) => error)).toMatchObject({ status: 429 });
  });

  it('retrieves one event by id and resends it, to every endpoint or to one, once (the server keeps no Idempotency-Key for it)', async () => {
    const fetch = standIn(({ method }) => (method === 'GET' ? json(event(7)) : json({ object: 'event_resend', event: 'evt_7', endpoints: ['we_1'] }, 202)));
    const client = new LendingClient({ ...credentials, fetch });
    expect(await client.events.retrieve('evt_7')).toEqual(event(7));
    expect(await client.events.resend('evt_7')).toEqual({ object: 'event_resend', event: 'evt_7', endpoints: ['we_1'] });
    await client.events.resend('evt_7', { endpoint: 'we_1' });
    expect(fetch.calls.map((call) => [call.method, call.url.pathname, call.body])).toEqual([
      ['GET', '/api/events/evt_7/', undefined],
      ['POST', '/api/events/evt_7/resend/', {}],
      ['POST', '/api/events/evt_7/resend/', { endpoint: 'we_1' }],
    ]);
    expect(fetch.calls.map((call) => call.headers['idempotency-key'])).toEqual([undefined, undefined, undefined]);
  });

  it('types its parameters: an ordering the log does not have does not compile', () => {
    const client = new LendingClient({ ...credentials, fetch: standIn(() => json({})) });
    // @ts-expect-error events are ordered by created_at only
    void client.events.list({ order_by: 'updated_at' });
    // @ts-expect-error a filter the log does not have
    void client.events.list({ entity: 'ent_1' });
  });
});

describe('client.webhookEndpoints', () => {
  it('creates an endpoint and gets its secret, sending only the fields given', async () => {
    const fetch = standIn(() => json({ ...endpoint, secret: SECRET }, 201));
    const client = new LendingClient({ ...credentials, fetch });
    expect(client.webhookEndpoints).toBeInstanceOf(WebhookEndpointsClient);
    const created = await client.webhookEndpoints.create({ url: endpoint.url, enabled_events: ['loan.*'] });
    expectTypeOf(created).toEqualTypeOf<WebhookEndpointWithSecret>();
    expect(created.secret).toBe(SECRET);
    await client.webhookEndpoints.create({ url: endpoint.url, enabled_events: ['*'], description: 'ledger sync' });
    expect(fetch.calls.map((call) => [call.method, call.url.pathname, call.body])).toEqual([
      ['POST', '/api/webhook_endpoints/', { url: endpoint.url, enabled_events: ['loan.*'] }],
      ['POST', '/api/webhook_endpoints/', { url: endpoint.url, enabled_events: ['*'], description: 'ledger sync' }],
    ]);
    expect(fetch.calls[0]?.headers['content-type']).toBe('application/json');
  });

  it('lists (no secret in the type), retrieves, updates, rotates and deletes, each at its path', async () => {
    const fetch = standIn(({ method, url }) => {
      if (method === 'DELETE') return new Response(null, { status: 204 });
      if (url.pathname.endsWith('/rotate_secret/')) return json({ ...endpoint, secret: SECRET });
      if (url.pathname === '/api/webhook_endpoints/') return json({ count: 1, next: null, previous: null, items: [endpoint] });
      return json(endpoint);
    });
    const client = new LendingClient({ ...credentials, fetch });
    const page = await client.webhookEndpoints.list({ page: 1 });
    // @ts-expect-error a listed endpoint carries no secret
    void page.items[0]?.secret;
    expect(await client.webhookEndpoints.retrieve('we_1')).toEqual(endpoint);
    await client.webhookEndpoints.update('we_1', { disabled: true, description: undefined });
    await client.webhookEndpoints.update('we_1', { url: 'https://example.com/v2', enabled_events: ['loan.repaid'], description: null });
    expect((await client.webhookEndpoints.rotateSecret('we_1')).secret).toBe(SECRET);
    await expect(client.webhookEndpoints.delete('we_1')).resolves.toBeUndefined();
    expect(fetch.calls.map((call) => [call.method, call.url.pathname + call.url.search, call.body])).toEqual([
      ['GET', '/api/webhook_endpoints/?page=1', undefined],
      ['GET', '/api/webhook_endpoints/we_1/', undefined],
      ['POST', '/api/webhook_endpoints/we_1/', { disabled: true }],
      ['POST', '/api/webhook_endpoints/we_1/', { url: 'https://example.com/v2', enabled_events: ['loan.repaid'], description: null }],
      ['POST', '/api/webhook_endpoints/we_1/rotate_secret/', {}],
      ['DELETE', '/api/webhook_endpoints/we_1/', undefined],
    ]);
  });

  it('replays a window and sends a test delivery, each at its path, answering the server’s outcome', async () => {
    const replayed: WebhookEndpointReplay = { object: 'webhook_endpoint_replay', endpoint: 'we_1', since: '2026-11-28T00:00:00.000000Z', until: '2026-11-28T12:00:00.000000Z', count: 3, has_more: false };
    const tested: WebhookEndpointTest = { object: 'webhook_endpoint_test', endpoint: 'we_1', event: `evt_test_${'0'.repeat(32)}`, ok: false, status_code: 500, duration_ms: 12, error: 'the receiver answered 500', response_body: null };
    const fetch = standIn(({ url }) => (url.pathname.endsWith('/replay/') ? json(replayed, 202) : json(tested)));
    const client = new LendingClient({ ...credentials, fetch });
    const replay = await client.webhookEndpoints.replay('we_1', { since: '2026-11-28T00:00:00Z' });
    expectTypeOf(replay).toEqualTypeOf<WebhookEndpointReplay>();
    expect(replay.count).toBe(3);
    await client.webhookEndpoints.replay('we_1', { since: '2026-11-28', until: '2026-11-28T12:00:00Z' });
    const test = await client.webhookEndpoints.test('we/1');
    expectTypeOf(test).toEqualTypeOf<WebhookEndpointTest>();
    expect(test).toEqual(tested);
    expect(fetch.calls.map((call) => [call.method, call.url.pathname, call.body])).toEqual([
      ['POST', '/api/webhook_endpoints/we_1/replay/', { since: '2026-11-28T00:00:00Z' }],
      ['POST', '/api/webhook_endpoints/we_1/replay/', { since: '2026-11-28', until: '2026-11-28T12:00:00Z' }],
      ['POST', '/api/webhook_endpoints/we%2F1/test/', {}],
    ]);
    expectTypeOf(endpoint.health.failing_since).toEqualTypeOf<string | null>();
  });

  it('lists and walks an endpoint’s delivery attempts by page number (the list has no cursor)', async () => {
    const attempt: WebhookDeliveryAttempt = {
      id: 'wha_1',
      object: 'webhook_delivery_attempt',
      event: 'evt_1',
      event_type: 'loan.created',
      attempt: 2,
      status_code: 500,
      duration_ms: 41,
      error: 'HTTP 500',
      response_body: 'oops',
      next_attempt_at: '2026-11-28T03:14:08.000000Z',
      created_at: '2026-11-28T03:13:38.000000Z',
    };
    const second = { ...attempt, id: 'wha_0', attempt: 1 };
    // As the server answers: `page`, `status` and `type` only (a cursor is a 422), next links with page numbers.
    const fetch = standIn(({ url }) => {
      if ([...url.searchParams.keys()].some((name) => !['page', 'status', 'type'].includes(name))) return problem(422, 'invalid_parameter');
      const page = Number(url.searchParams.get('page') ?? '1');
      const next = new URL(url);
      next.searchParams.set('page', '2');
      return json({ count: 2, next: page === 1 ? next.href : null, previous: null, items: page === 1 ? [attempt] : [second] });
    });
    const client = new LendingClient({ ...credentials, fetch });
    expect((await client.webhookEndpoints.deliveries('we_1').list()).items).toEqual([attempt]);
    const walked: WebhookDeliveryAttempt[] = [];
    for await (const item of client.webhookEndpoints.deliveries('we/1').listAll()) walked.push(item);
    expect(walked).toEqual([attempt, second]);
    await client.webhookEndpoints.deliveries('we_1').list({ status: 'failed', type: 'loan.*' });
    const endpoints: WebhookEndpoint[] = [];
    for await (const item of client.webhookEndpoints.listAll()) endpoints.push(item);
    expect(endpoints).toHaveLength(2);
    expect(fetch.calls.map((call) => call.url.pathname + call.url.search)).toEqual([
      '/api/webhook_endpoints/we_1/deliveries/',
      '/api/webhook_endpoints/we%2F1/deliveries/',
      '/api/webhook_endpoints/we%2F1/deliveries/?page=2',
      '/api/webhook_endpoints/we_1/deliveries/?status=failed&type=loan.*',
      '/api/webhook_endpoints/',
      '/api/webhook_endpoints/?page=2',
    ]);
  });

  it('throws the service’s refusals as LendingApiErrors; a create, rotation or DELETE that got no answer, or a 504, is not sent again', async () => {
    const refusing = new LendingClient({ ...credentials, fetch: standIn(() => problem(403, 'insufficient_scope')) });
    const refused = await refusing.webhookEndpoints.create({ url: endpoint.url, enabled_events: ['*'] }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(LendingApiError);
    expect(refused).toMatchObject({ status: 403, code: 'insufficient_scope' });
    await expect(refusing.webhookEndpoints.delete('we_1')).rejects.toMatchObject({ status: 403 });

    const dropping = standIn(() => Promise.reject(new TypeError('fetch failed')));
    const client = new LendingClient({ ...credentials, fetch: dropping, sleep: async () => {} });
    await expect(client.webhookEndpoints.delete('we_1')).rejects.toThrow('fetch failed');
    await expect(client.webhookEndpoints.create({ url: endpoint.url, enabled_events: ['*'] })).rejects.toThrow('fetch failed');
    await expect(client.webhookEndpoints.rotateSecret('we_1')).rejects.toThrow('fetch failed');
    await expect(client.events.resend('evt_1')).rejects.toThrow('fetch failed');
    expect(dropping.calls.map((call) => call.method)).toEqual(['DELETE', 'POST', 'POST', 'POST']);
    expect(dropping.calls.every((call) => call.headers['idempotency-key'] === undefined)).toBe(true);

    const unknown = standIn(() => problem(504, 'outcome_unknown'));
    const unsure = new LendingClient({ ...credentials, fetch: unknown, sleep: async () => {} });
    await expect(unsure.webhookEndpoints.create({ url: endpoint.url, enabled_events: ['*'] })).rejects.toMatchObject({ status: 504, code: 'outcome_unknown' });
    expect(unknown.calls).toHaveLength(1);
  });

  it('retries a 503 on DELETE and on create: the answer says nothing ran', async () => {
    let calls = 0;
    const fetch = standIn(({ method }) =>
      ++calls % 2 === 1 ? problem(503, 'service_unavailable') : method === 'DELETE' ? new Response(null, { status: 204 }) : json({ ...endpoint, secret: SECRET }, 201),
    );
    const client = new LendingClient({ ...credentials, fetch, sleep: async () => {} });
    await client.webhookEndpoints.delete('we_1');
    expect((await client.webhookEndpoints.create({ url: endpoint.url, enabled_events: ['*'] })).secret).toBe(SECRET);
    expect(fetch.calls.map((call) => call.method)).toEqual(['DELETE', 'DELETE', 'POST', 'POST']);
  });
});
