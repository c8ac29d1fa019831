import { beforeAll, describe, expect, it } from 'vitest';
import { createApiKey } from '../../src/auth/api-keys.js';
import { API_VERSION } from '../../src/domain/api-version.js';
import { publishAllEvents } from '../../src/events/publish-events.js';
import { events } from '../../src/events/events-resource.js';
import { schemaProblems } from '../../src/listing/schema-check.js';
import { allPages, json, useApp, type Page } from '../helpers/app.js';
import { importLines } from '../helpers/import-lines.js';
import { injectFetch } from '../helpers/inject-fetch.js';
import { LendingClient } from '../../packages/client/src/index.js';
import { postLoanWrite } from '../helpers/loans.js';
import { describeEachStore } from '../helpers/stores.js';
import { basicAuthorization, createTenant, type Tenant } from '../helpers/tenants.js';

type ApiEvent = {
  id: string;
  object: string;
  type: string;
  created_at: string;
  api_version: string;
  data: { object: Record<string, unknown>; previous_attributes?: Record<string, unknown> };
  request_id: string | null;
  idempotency_key: string | null;
  import_id: string | null;
};

const BOOK = [
  { object: 'entity', uid: 'ent_ev', name: 'Eventful Ltd', country: 'GB' },
  { object: 'payment_method', uid: 'pm_ev', entity: 'ent_ev', type: 'ACH', currency: 'USD', last_2: '42' },
  { object: 'credit_limit', uid: 'cl_ev', entity: 'ent_ev', currency: 'USD', capacity: '1000.00', rate: '0.0005' },
];

describeEachStore('the events API', (store) => {
  const app = useApp(store);
  let tenant: Tenant;
  let writer: string;
  let webhooks: string;

  const get = (url: string, authorization = tenant.authorization) => app().inject({ method: 'GET', url, headers: { authorization } });
  const page = async (url: string) => {
    const response = await get(url);
    expect(response.statusCode, response.body).toBe(200);
    return json<Page<ApiEvent>>(response);
  };
  const latest = async (object: string, type: string) => (await page(`/api/events/?object=${object}&type=${type}`)).items[0]!;
  const record = async (url: string) => json<Record<string, unknown>>(await get(url));
  const publish = () => publishAllEvents(store(), tenant.org.id);
  /** Follows `next` from `url` while there is one, as a client looping `while (next)` does; at most `maxPages` (a walk that never ends fails). */
  const walkEvents = async (url: string, maxPages = 100) => {
    const events: ApiEvent[] = [];
    let next: string | null = url;
    let pages = 0;
    while (next !== null) {
      pages += 1;
      if (pages > maxPages) throw new Error(`${url}: the walk did not end within ${maxPages} pages (next is never null)`);
      const one: Page<ApiEvent> = await page(next);
      events.push(...one.items);
      next = one.next === null ? null : new URL(one.next).pathname + new URL(one.next).search;
    }
    return { events, pages };
  };

  beforeAll(async () => {
    tenant = await createTenant(store(), 'Events reader');
    writer = basicAuthorization(tenant.org.uid, (await createApiKey(store(), tenant.org.uid, undefined, 'write')).key);
    webhooks = basicAuthorization(tenant.org.uid, (await createApiKey(store(), tenant.org.uid, undefined, 'webhooks')).key);
    await importLines(store(), tenant.org.uid, BOOK);
    await publish();
  });

  it('has the indexes its filters and ordering need, as the schema check reads the events definition', async () => {
    expect(await schemaProblems(store(), events)).toEqual([]);
  });

  it('renders data.object of every object type exactly as GET answers right after the change', async () => {
    // Created by the import.
    expect((await latest('ent_ev', 'entity.created')).data.object).toEqual(await record('/api/entities/ent_ev/'));
    expect((await latest('pm_ev', 'payment_method.created')).data.object).toEqual(await record('/api/methods/pm_ev/'));
    expect((await latest('cl_ev', 'credit_limit.created')).data.object).toEqual(await record('/api/limits/cl_ev/'));

    // A drawdown: the entry and the limit.
    const drawdown = await app().inject({
      method: 'POST',
      url: '/api/limits/cl_ev/drawdowns/',
      headers: { authorization: writer, 'content-type': 'application/json', 'idempotency-key': 'ev-draw-1', 'x-request-id': 'req-ev-draw-1' },
      payload: '{"amount":"100.50","reference":"ev"}',
    });
    expect(drawdown.statusCode, drawdown.body).toBe(201);
    await publish();
    const entry = json<{ entry: { id: string } }>(drawdown).entry;
    const entryEvent = await latest(entry.id, 'ledger_entry.created');
    const entries = json<Page>(await get('/api/limits/cl_ev/entries/')).items;
    expect(entryEvent.data.object).toEqual(entries.find((candidate) => candidate.id === entry.id));
    expect(entryEvent).toMatchObject({ request_id: 'req-ev-draw-1', idempotency_key: 'ev-draw-1', import_id: null, api_version: API_VERSION, object: 'event' });
    const limitEvent = await latest('cl_ev', 'credit_limit.updated');
    const limit = await record('/api/limits/cl_ev/');
    expect(limitEvent.data.object).toEqual(limit);
    expect(Object.keys(limitEvent.data.object)).toEqual(Object.keys(limit));
    expect(limitEvent.data.previous_attributes).toEqual({ outstanding: 0, balance: 1000, updated_at: expect.stringMatching(/^\d{4}-.*\.\d{6}Z$/) });

    // A loan, then its full repayment: loan.created, loan.repaid.
    const created = await postLoanWrite(app(), undefined, { credit_limit: 'cl_ev', payment_method: 'pm_ev', principal: '200.00' }, { authorization: writer });
    expect(created.statusCode, created.body).toBe(201);
    const loanUid = json<{ loan: { uid: string } }>(created).loan.uid;
    await publish();
    expect((await latest(loanUid, 'loan.created')).data.object).toEqual(await record(`/api/loans/${loanUid}/`));
    const repaid = await postLoanWrite(app(), loanUid, { amount: '200.00' }, { authorization: writer });
    expect(repaid.statusCode, repaid.body).toBe(201);
    await publish();
    const repaidEvent = await latest(loanUid, 'loan.repaid');
    expect(repaidEvent.data.object).toEqual(await record(`/api/loans/${loanUid}/`));
    expect(repaidEvent.data.previous_attributes).toMatchObject({ outstanding: 200, status: 'active' });
    expect((await latest('cl_ev', 'credit_limit.updated')).data.object).toEqual(await record('/api/limits/cl_ev/'));

    // Updated by a re-import.
    await importLines(store(), tenant.org.uid, [{ ...BOOK[0], name: 'Eventful Group plc' }, { ...BOOK[1], last_2: '07' }]);
    await publish();
    const renamed = await latest('ent_ev', 'entity.updated');
    expect(renamed.data.object).toEqual(await record('/api/entities/ent_ev/'));
    expect(renamed.data.previous_attributes).toMatchObject({ name: 'Eventful Ltd' });
    expect((await latest('pm_ev', 'payment_method.updated')).data.object).toEqual(await record('/api/methods/pm_ev/'));
  });

  it('lists newest first by default, oldest first with order_by=created_at, and filters by type, prefix, object and time', async () => {
    const all = (await allPages(app(), '/api/events/', tenant.authorization)).flatMap((one) => one.items as ApiEvent[]);
    expect(all.length).toBeGreaterThan(10);
    const stamps = all.map((event) => event.created_at);
    expect(stamps).toEqual([...stamps].sort().reverse());
    expect(new Set(stamps).size).toBe(stamps.length);
    const oldestFirst = (await allPages(app(), '/api/events/?order_by=created_at', tenant.authorization)).flatMap((one) => one.items as ApiEvent[]);
    expect(oldestFirst.map((event) => event.id)).toEqual(all.map((event) => event.id).reverse());

    const limits = await page('/api/events/?type=credit_limit.*');
    expect(limits.count).toBe(all.filter((event) => event.type.startsWith('credit_limit.')).length);
    expect(limits.items.every((event) => event.type.startsWith('credit_limit.'))).toBe(true);
    expect((await page('/api/events/?type=CREDIT_LIMIT.CREATED')).items.map((event) => event.type)).toEqual(['credit_limit.created']);
    expect((await page('/api/events/?type=*')).count).toBe(all.length);
    const aboutLimit = await page('/api/events/?object=cl_ev&order_by=created_at');
    expect(aboutLimit.items.map((event) => event.data.object.uid)).toEqual(aboutLimit.items.map(() => 'cl_ev'));
    const middle = oldestFirst[5]!.created_at;
    const since = await page(`/api/events/?created_from=${middle}&order_by=created_at`);
    expect(since.items[0]!.created_at).toBe(middle);
    expect(since.count).toBe(oldestFirst.length - 5);
    expect((await page(`/api/events/?created_to=${middle}`)).count).toBe(6);
  });

  it('refuses an unknown type, a malformed pattern and unknown parameters with 422 naming them', async () => {
    for (const value of ['credit_limit.deleted', 'credit_limit.', 'loan*', 'nothing.*', '', 'credit_limit.created,loan.created']) {
      const response = await get(`/api/events/?type=${encodeURIComponent(value)}`);
      expect(response.statusCode, value).toBe(422);
      expect(json<{ errors: { param: string }[] }>(response).errors.map((error) => error.param)).toEqual(['type']);
    }
    const unknown = await get('/api/events/?updated_from=2024-01-01&order_by=type&page_size=5');
    expect(unknown.statusCode).toBe(422);
    expect(json<{ errors: { param: string }[] }>(unknown).errors.map((error) => error.param).sort()).toEqual(['order_by', 'page_size', 'updated_from']);
    expect((await get('/api/events/?page=999')).statusCode).toBe(404);
    expect((await get('/api/events/?cursor=&page=1')).statusCode).toBe(422);
  });

  it('walks the log by cursor, each event once, and a cursor from another list is refused', async () => {
    const all = (await allPages(app(), '/api/events/', tenant.authorization)).flatMap((one) => one.items as ApiEvent[]);
    const walk = await walkEvents('/api/events/?order_by=created_at&cursor=');
    expect(walk.events.map((event) => event.id)).toEqual(all.map((event) => event.id).reverse());
    const first = await page('/api/events/?type=loan.*&cursor=');
    expect(first.next).toBeNull();
    const foreign = new URL((await page('/api/events/?cursor=')).next!).searchParams.get('cursor')!;
    expect((await get(`/api/events/?type=loan.*&cursor=${encodeURIComponent(foreign)}`)).statusCode).toBe(422);
  });

  it('ends a cursor walk with next: null in both orderings, a full last page included (a `while (next)` loop stops)', async () => {
    const count = (await page('/api/events/')).count;
    for (const order of ['created_at', '-created_at']) {
      const walk = await walkEvents(`/api/events/?order_by=${order}&cursor=`, Math.ceil(count / 10) + 1);
      expect(walk.events, order).toHaveLength(count);
      expect(walk.pages, order).toBe(Math.max(1, Math.ceil(count / 10)));
    }
    // A last page that is full: the ten oldest events, walked oldest first, end there.
    const tenth = (await walkEvents('/api/events/?order_by=created_at&cursor=')).events[9]!;
    const ten = await walkEvents(`/api/events/?order_by=created_at&created_to=${encodeURIComponent(tenth.created_at)}&cursor=`, 2);
    expect(ten).toMatchObject({ pages: 1 });
    expect(ten.events).toHaveLength(10);
  });

  it("ends the SDK's walk (listAll) at the page whose next is null, in both orderings, with one request a page", async () => {
    const count = (await page('/api/events/')).count;
    for (const order_by of ['created_at', '-created_at'] as const) {
      const fetch = injectFetch(app);
      const client = new LendingClient({ baseUrl: 'http://localhost', organizationId: tenant.org.uid, apiKey: tenant.apiKey, fetch });
      const seen: string[] = [];
      for await (const event of client.events.listAll({ order_by })) {
        seen.push(event.id);
        if (fetch.requests.length > Math.ceil(count / 10) + 1) throw new Error(`${order_by}: the walk did not end (${fetch.requests.length} requests)`);
      }
      expect(seen, order_by).toHaveLength(count);
      expect(fetch.requests, order_by).toHaveLength(Math.max(1, Math.ceil(count / 10)));
    }
  });

  it('retrieves one event by id, and answers 404 for an unknown id or another organization\'s', async () => {
    const [newest] = (await page('/api/events/')).items;
    const one = await get(`/api/events/${newest!.id}/`);
    expect(one.statusCode).toBe(200);
    expect(json(one)).toEqual(newest);
    expect(one.headers['cache-control']).toBe('no-store');
    expect((await get('/api/events/evt_0123456789abcdef0123456789abcdef/')).statusCode).toBe(404);
    const other = await createTenant(store(), 'Other lender');
    const foreign = await get(`/api/events/${newest!.id}/`, other.authorization);
    expect(foreign.statusCode).toBe(404);
    expect(foreign.body).not.toContain(tenant.org.uid);
    expect(json<Page>(await get('/api/events/', other.authorization)).count).toBe(0);
    expect((await get(`/api/events/${newest!.id}/?expand=data`)).statusCode).toBe(422);
  });

  describe('POST /api/events/{id}/resend/', () => {
    const endpoint = async (uid: string, enabledEvents: string[], disabled = false) => {
      await store().query(
        `INSERT INTO webhook_endpoints (org_id, uid, url, enabled_events, disabled, disabled_reason, secret_ciphertext, created_at, updated_at)
         VALUES ($1, $2, 'https://example.com/hook', $3, $4, CASE WHEN $4 THEN 'requested' END, '\\x00'::bytea, now(), now())`,
        [tenant.org.id, uid, enabledEvents, disabled],
      );
    };
    const deliveries = async (eventUid: string) =>
      store().query<{ endpoint: string; state: string; due: boolean }>(
        `SELECT w.uid AS endpoint, d.state, d.next_attempt_at <= now() AS due FROM webhook_deliveries d
           JOIN webhook_endpoints w ON w.org_id = d.org_id AND w.id = d.endpoint_id
           JOIN events e ON e.org_id = d.org_id AND e.id = d.event_id
          WHERE d.org_id = $1 AND e.uid = $2 ORDER BY d.id`,
        [tenant.org.id, eventUid],
      );
    const resend = (eventUid: string, body?: string, authorization = webhooks) =>
      app().inject({
        method: 'POST',
        url: `/api/events/${eventUid}/resend/`,
        headers: { authorization, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { payload: body }),
      });
    let eventUid = '';

    beforeAll(async () => {
      await endpoint('we_limits', ['credit_limit.*']);
      await endpoint('we_all', ['*']);
      await endpoint('we_loans', ['loan.created']);
      await endpoint('we_off', ['*'], true);
      eventUid = (await latest('cl_ev', 'credit_limit.created')).id;
    });

    it('queues a new delivery, due now, for each enabled endpoint that wants the event; resent while it waits, it adds nothing and its retry comes due now', async () => {
      const first = await resend(eventUid);
      expect(first.statusCode, first.body).toBe(202);
      expect(json(first)).toEqual({ object: 'event_resend', event: eventUid, endpoints: ['we_limits', 'we_all'] });
      expect(await deliveries(eventUid)).toEqual([
        { endpoint: 'we_limits', state: 'pending', due: true },
        { endpoint: 'we_all', state: 'pending', due: true },
      ]);
      // A retry scheduled an hour away: the resend brings it forward instead of queuing a second delivery.
      await store().query(
        `UPDATE webhook_deliveries d SET next_attempt_at = now() + interval '1 hour', attempts = 1
           FROM events e WHERE d.org_id = $1 AND e.org_id = $1 AND e.id = d.event_id AND e.uid = $2`,
        [tenant.org.id, eventUid],
      );
      const again = await resend(eventUid, '{}');
      expect(again.statusCode).toBe(202);
      expect(json(again)).toEqual({ object: 'event_resend', event: eventUid, endpoints: ['we_limits', 'we_all'] });
      expect(await deliveries(eventUid)).toEqual([
        { endpoint: 'we_limits', state: 'pending', due: true },
        { endpoint: 'we_all', state: 'pending', due: true },
      ]);
    });

    it('resends to the one endpoint named, even one that does not want the event; refuses a disabled one', async () => {
      const named = await resend(eventUid, '{"endpoint":"we_loans"}');
      expect(named.statusCode, named.body).toBe(202);
      expect(json(named)).toEqual({ object: 'event_resend', event: eventUid, endpoints: ['we_loans'] });
      expect((await deliveries(eventUid)).filter((row) => row.endpoint === 'we_loans')).toHaveLength(1);
      const before = (await deliveries(eventUid)).length;
      const disabled = await resend(eventUid, '{"endpoint":"we_off"}');
      expect(disabled.statusCode).toBe(422);
      expect((await deliveries(eventUid)).length).toBe(before);
    });

    it('answers 404 for an unknown event or endpoint, 403 to a key without the webhooks scope, 422 and 400 for a bad body', async () => {
      const before = (await deliveries(eventUid)).length;
      expect((await resend('evt_missing')).statusCode).toBe(404);
      const unknownEndpoint = await resend(eventUid, '{"endpoint":"we_missing"}');
      expect(unknownEndpoint.statusCode).toBe(404);
      expect(unknownEndpoint.body).toContain('we_missing');
      expect((await resend(eventUid, undefined, writer)).statusCode).toBe(403);
      expect((await resend(eventUid, undefined, tenant.authorization)).statusCode).toBe(403);
      const other = await createTenant(store(), 'Other webhooks', 'webhooks');
      expect((await resend(eventUid, undefined, other.authorization)).statusCode).toBe(404);
      expect((await resend(eventUid, '{"endpoint":7,"colour":"red"}')).statusCode).toBe(422);
      expect((await resend(eventUid, '{"endpoint":')).statusCode).toBe(400);
      expect((await deliveries(eventUid)).length).toBe(before);
    });
  });

  it('gives every state of a record a later updated_at than the one before, even when writes share a transaction, so a receiver can drop stale states by it', async () => {
    // Concurrent drawdowns of one limit: the write queue commits them together, in one transaction.
    await importLines(store(), tenant.org.uid, [{ ...BOOK[2], uid: 'cl_ev_burst' }]);
    const draws = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        app().inject({
          method: 'POST',
          url: '/api/limits/cl_ev_burst/drawdowns/',
          headers: { authorization: writer, 'content-type': 'application/json', 'idempotency-key': `ev-burst-${i}` },
          payload: '{"amount":"1.00"}',
        }),
      ),
    );
    expect(draws.map((draw) => draw.statusCode)).toEqual(draws.map(() => 201));
    // An import that creates a limit and draws on it.
    await importLines(store(), tenant.org.uid, [
      { ...BOOK[2], uid: 'cl_ev_imported' },
      { object: 'drawdown', limit: 'cl_ev_imported', amount: '25.00' },
    ]);
    // One limit in two batches of one import, both lines stamped with the same export time.
    const exported = '2026-01-01T00:00:00.000000Z';
    await importLines(
      store(),
      tenant.org.uid,
      [
        { ...BOOK[2], uid: 'cl_ev_batches', capacity: '100.00', updated_at: exported },
        { ...BOOK[2], uid: 'cl_ev_batches', capacity: '200.00', updated_at: exported },
      ],
      { batchLines: 1 },
    );
    await publish();
    const batches = (await walkEvents('/api/events/?object=cl_ev_batches&order_by=created_at&cursor=')).events.map((event) => event.data.object);
    expect(batches.map((state) => state.capacity)).toEqual([100, 200]);
    expect(String(batches[1]!.updated_at) > String(batches[0]!.updated_at), `${batches[0]!.updated_at} then ${batches[1]!.updated_at}`).toBe(true);
    for (const uid of ['cl_ev_burst', 'cl_ev_imported']) {
      const states = (await walkEvents(`/api/events/?object=${uid}&order_by=created_at&cursor=`)).events.map((event) => event.data.object);
      const byOutstanding = [...states].sort((a, b) => Number(a.outstanding) - Number(b.outstanding));
      const stamps = byOutstanding.map((state) => String(state.updated_at));
      expect(stamps, `${uid}: states by outstanding`).toEqual([...stamps].sort());
      expect(new Set(stamps).size, `${uid}: ${stamps.join(', ')}`).toBe(states.length);
    }
  });
});
