import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { buildApp } from '../helpers/app.js';
import type { Store } from '../../src/store/store.js';
import { describeEachStore } from '../helpers/stores.js';
import { createTenant, type Tenant } from '../helpers/tenants.js';

const PATH = '/api/webhook_endpoints/';
const TYPES = ['loan.created', 'loan.repaid', 'credit_limit.updated'] as const;

interface Modelled { readonly type: (typeof TYPES)[number]; readonly ok: boolean }
interface Listed { id: string; event_type: string | null; error: string | null; status_code: number | null }
interface Page { count: number; next: string | null; items: Listed[] }

function get(app: FastifyInstance, tenant: Tenant, url: string): Promise<LightMyRequestResponse> {
  return app.inject({ method: 'GET', url, headers: { authorization: tenant.authorization } });
}

/** An endpoint and, for each modelled attempt, an event of its type and that attempt, newest last. */
async function endpointWith(app: FastifyInstance, db: Store, tenant: Tenant, attempts: readonly Modelled[]): Promise<string> {
  const created = await app.inject({
    method: 'POST', url: PATH, headers: { authorization: tenant.authorization, 'content-type': 'application/json' },
    payload: JSON.stringify({ url: `https://hooks.example.com/${randomUUID()}`, enabled_events: ['*'] }),
  });
  expect(created.statusCode, created.body).toBe(201);
  const endpoint = created.json<{ id: string }>().id;
  for (const [index, attempt] of attempts.entries()) {
    const [clock] = await db.query<{ at: string }>(
      `SELECT greatest(clock_timestamp(), max(created_at) + interval '1 microsecond')::text AS at FROM events WHERE org_id = $1`, [tenant.org.id]);
    const uid = `evt_${randomUUID().replaceAll('-', '')}`;
    await db.query(`INSERT INTO events (org_id, uid, type, object_uid, data_object, created_at) VALUES ($1, $2, $3, 'ln_1', '{}'::jsonb, $4::timestamptz)`,
      [tenant.org.id, uid, attempt.type, clock!.at]);
    await db.query(
      `INSERT INTO webhook_attempts (org_id, endpoint_id, delivery_id, event_uid, attempt, status_code, duration_ms, error, created_at)
       SELECT $1, w.id, 1, $3, 1, CASE WHEN $4 THEN 200 ELSE 500 END, 5, CASE WHEN $4 THEN NULL ELSE 'the receiver answered 500' END, now() + $5 * interval '1 millisecond'
         FROM webhook_endpoints w WHERE w.org_id = $1 AND w.uid = $2`,
      [tenant.org.id, endpoint, uid, attempt.ok, index],
    );
  }
  return endpoint;
}

/** Every page of a filtered list, following `next`. */
async function listAll(app: FastifyInstance, tenant: Tenant, url: string): Promise<{ count: number; items: Listed[] }> {
  const items: Listed[] = [];
  let count = -1;
  for (let next: string | null = url; next; ) {
    const response = await get(app, tenant, next.replace(/^https?:\/\/[^/]+/, ''));
    expect(response.statusCode, response.body).toBe(200);
    const page: Page = response.json<Page>();
    count = page.count;
    items.push(...page.items);
    next = page.next;
  }
  return { count, items };
}

describeEachStore('webhook delivery attempts: status and type filters', (store) => {
  let app: FastifyInstance;
  let owner: Tenant;
  let other: Tenant;

  beforeAll(async () => {
    app = await buildApp({ store: store() });
    owner = await createTenant(store(), 'Filtered hooks', 'webhooks');
    other = await createTenant(store(), 'Other filtered hooks', 'webhooks');
  });
  afterAll(async () => {
    await app.close();
  });

  it('answers exactly the attempts of the outcome and event type asked, newest first, with their exact count', async () => {
    const attempt = fc.record({ type: fc.constantFrom(...TYPES), ok: fc.boolean() });
    await fc.assert(
      fc.asyncProperty(fc.array(attempt, { minLength: 0, maxLength: 23 }), fc.option(fc.constantFrom('succeeded', 'failed')), fc.option(fc.constantFrom<string>(...TYPES, 'loan.*')), async (attempts, status, type) => {
        const endpoint = await endpointWith(app, store(), owner, attempts);
        const query = new URLSearchParams([...(status ? [['status', status] as [string, string]] : []), ...(type ? [['type', type] as [string, string]] : [])]).toString();
        const listed = await listAll(app, owner, `${PATH}${endpoint}/deliveries/${query ? `?${query}` : ''}`);
        const expected = attempts
          .filter((a) => status === null || a.ok === (status === 'succeeded'))
          .filter((a) => type === null || (type === 'loan.*' ? a.type.startsWith('loan.') : a.type === type))
          .reverse();
        expect(listed.count).toBe(expected.length);
        expect(listed.items.map((item) => [item.event_type, item.error === null])).toEqual(expected.map((a) => [a.type, a.ok]));
      }),
      { numRuns: 12 },
    );
  });

  it('keeps the filters in the next page link', async () => {
    const endpoint = await endpointWith(app, store(), owner, Array.from({ length: 14 }, (_, i) => ({ type: TYPES[i % 2]!, ok: false })));
    const first = (await get(app, owner, `${PATH}${endpoint}/deliveries/?type=loan.created&status=failed`)).json<Page>();
    expect(first.count).toBe(7);
    const all = (await get(app, owner, `${PATH}${endpoint}/deliveries/?status=failed`)).json<Page>();
    expect(all.count).toBe(14);
    expect(new URL(all.next!).searchParams.get('status')).toBe('failed');
    expect(new URL(all.next!).searchParams.get('page')).toBe('2');
  });

  it('refuses an unknown status or type, one given twice, or another parameter, naming each', async () => {
    const endpoint = await endpointWith(app, store(), owner, []);
    const cases: Array<[string, string[]]> = [
      ['status=delivered', ['status']],
      ['status=FAILED', ['status']],
      ['type=loan.exploded', ['type']],
      ['type=', ['type']],
      ['status=failed&status=succeeded', ['status']],
      ['type=loan.*&type=loan.created', ['type']],
      ['state=failed&type=nope', ['type', 'state']],
      ['page=0&status=x', ['status', 'page']],
    ];
    for (const [query, params] of cases) {
      const response = await get(app, owner, `${PATH}${endpoint}/deliveries/?${query}`);
      expect(response.statusCode, query).toBe(422);
      expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
      const problem = response.json<{ code: string; errors: Array<{ param: string; detail: string }> }>();
      expect(problem.code).toBe('invalid_parameter');
      expect(problem.errors.map((error) => error.param).sort(), query).toEqual([...params].sort());
    }
  });

  it("never lists another organization's attempts, nor finds its endpoint", async () => {
    const mine = await endpointWith(app, store(), owner, [{ type: 'loan.created', ok: false }]);
    const theirs = await endpointWith(app, store(), other, [{ type: 'loan.created', ok: false }, { type: 'loan.created', ok: false }]);
    expect((await get(app, other, `${PATH}${mine}/deliveries/?status=failed&type=loan.created`)).statusCode).toBe(404);
    const listed = (await get(app, owner, `${PATH}${mine}/deliveries/?status=failed&type=loan.created`)).json<Page>();
    expect(listed.count).toBe(1);
    expect((await get(app, other, `${PATH}${theirs}/deliveries/?type=loan.*`)).json<Page>().count).toBe(2);
  });
});
