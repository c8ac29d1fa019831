import { randomBytes } from 'node:crypto';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../helpers/app.js';
import { createApiKey } from '../../src/auth/api-keys.js';
import { publishAllEvents } from '../../src/events/publish-events.js';
import { HEALTH_COLUMN, type EndpointHealth, type HourOfAttempts as Hour } from '../../src/webhooks/endpoint-health.js';
import { replayFailedEvents } from '../../src/webhooks/endpoint-replay.js';
import { creditLimit, insertCreditLimits } from '../helpers/records.js';
import { describeEachStore, distributedOnCitus } from '../helpers/stores.js';
import { basicAuthorization, createTenant, type Tenant } from '../helpers/tenants.js';
import type { Queryable } from '../../src/store/store.js';
import { insertEndpoint, LOCAL_POLICY, newDeliverer, TEST_BOX, type TestEndpoint } from './deliverer-helpers.js';
import { startHttpReceiver, type Receiver } from './receivers.js';

const PATH = '/api/webhook_endpoints/';

type Endpoint = { id: string; health: EndpointHealth; secret?: string };

/** The start of the UTC hour of an RFC 3339 time, as hourly_24h writes it. */
const hourOf = (time: string): string => `${time.slice(0, 13)}:00:00Z`;

/** 24 consecutive hours, oldest first, the last one the hour of `now` (or, past a boundary since, the next). */
function expectHours(hours: readonly Hour[], now: string): void {
  expect(hours).toHaveLength(24);
  const starts = hours.map((hour) => Date.parse(hour.hour));
  expect(starts.slice(1).map((start, index) => start - starts[index]!)).toEqual(Array(23).fill(3_600_000));
  expect(hours.every((hour) => /^\d{4}-\d\d-\d\dT\d\d:00:00Z$/.test(hour.hour))).toBe(true);
  expect(starts[23]! - Date.parse(hourOf(now))).toBeGreaterThanOrEqual(0);
  expect(starts[23]! - Date.parse(hourOf(now))).toBeLessThanOrEqual(3_600_000);
}

/** What the shared receiver answers: 200 unless a test changes it. */
const answer = { status: 200 };

/** An endpoint as the API creates it (a `we_` and 32 hex digits id), its secret sealed with TEST_BOX. */
async function addEndpoint(db: Queryable, orgId: string, url: string): Promise<TestEndpoint> {
  const endpoint = await insertEndpoint(db, orgId, url);
  const uid = `we_${randomBytes(16).toString('hex')}`;
  await db.query('UPDATE webhook_endpoints SET uid = $3 WHERE org_id = $1 AND id = $2', [orgId, endpoint.id, uid]);
  return { ...endpoint, uid };
}

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  Plans?: PlanNode[];
}

/** The relations a plan reads whole. */
function sequentialScans(node: PlanNode): string[] {
  const own = node['Node Type'] === 'Seq Scan' && node['Relation Name'] ? [node['Relation Name']] : [];
  return [...own, ...(node.Plans ?? []).flatMap(sequentialScans)];
}

describeEachStore('webhook endpoint health, replay, test and resend folding', (store, kind) => {
  let app: FastifyInstance;
  let owner: Tenant;
  let other: Tenant;
  let receiver: Receiver;

  const send = (method: 'GET' | 'POST', url: string, body?: unknown, authorization = owner.authorization): Promise<LightMyRequestResponse> =>
    app.inject({
      method,
      url,
      headers: { authorization, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { payload: typeof body === 'string' ? body : JSON.stringify(body) }),
    });
  const endpointOf = async (uid: string): Promise<Endpoint> => {
    const response = await send('GET', `${PATH}${uid}/`);
    expect(response.statusCode, response.body).toBe(200);
    return response.json<Endpoint>();
  };
  const databaseNow = async (): Promise<string> => {
    const [row] = await store().query<{ now: string }>(`SELECT to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS now`);
    return row!.now;
  };
  const pending = async (orgId: string, endpointId: string): Promise<{ event_id: string; due: boolean }[]> =>
    store().query(
      `SELECT event_id::text AS event_id, next_attempt_at <= now() AS due FROM webhook_deliveries
        WHERE org_id = $1 AND endpoint_id = $2 AND state = 'pending' ORDER BY event_id`,
      [orgId, endpointId],
    );

  beforeAll(async () => {
    app = await buildApp({ store: store(), webhooks: { secretBox: TEST_BOX, destinations: LOCAL_POLICY } });
    owner = await createTenant(store(), 'Health', 'webhooks');
    other = await createTenant(store(), 'Other health', 'webhooks');
    receiver = await startHttpReceiver((_request, response) => response.writeHead(answer.status).end(`answered ${answer.status}`));
  });
  afterAll(async () => {
    await receiver.close();
    await app.close();
  });

  describe('health', () => {
    it('is on every endpoint: pending, last attempt and success, failing_since and the last 24 hours by outcome', async () => {
      const tenant = await createTenant(store(), 'Health counts', 'webhooks');
      const failing = await startHttpReceiver((_request, response) => response.writeHead(500).end());
      try {
        const good = await addEndpoint(store(), tenant.org.id, `http://127.0.0.1:${receiver.port}/`);
        const bad = await addEndpoint(store(), tenant.org.id, `http://127.0.0.1:${failing.port}/`);
        const created = await send('POST', PATH, { url: `http://127.0.0.1:${receiver.port}/new`, enabled_events: ['loan.*'] }, tenant.authorization);
        expect(created.statusCode, created.body).toBe(201);
        const noAttempts = (hours: Hour[]) => hours.every((hour) => hour.succeeded === 0 && hour.failed === 0);
        const fresh = { pending: 0, last_attempt_at: null, last_success_at: null, failing_since: null, succeeded_24h: 0, failed_24h: 0, hourly_24h: expect.toSatisfy(noAttempts) };
        expect(created.json<Endpoint>().health).toEqual(fresh);

        await insertCreditLimits(store(), tenant.org.id, [creditLimit(), creditLimit(), creditLimit()]);
        await publishAllEvents(store(), tenant.org.id);
        const before = await databaseNow();
        expect((await pending(tenant.org.id, bad.id)).length).toBe(3);
        const listed = await send('GET', PATH, undefined, tenant.authorization);
        const healthOf = (page: LightMyRequestResponse, uid: string) => page.json<{ items: Endpoint[] }>().items.find((item) => item.id === uid)!.health;
        expect(healthOf(listed, bad.uid)).toEqual({ ...fresh, pending: 3 });

        await newDeliverer(store()).deliverDue();
        const after = await databaseNow();
        const page = await send('GET', PATH, undefined, tenant.authorization);
        expect(page.statusCode).toBe(200);
        const goodHealth = healthOf(page, good.uid);
        expect(goodHealth).toMatchObject({ pending: 0, failing_since: null, succeeded_24h: 3, failed_24h: 0 });
        expect(goodHealth.last_success_at).toBe(goodHealth.last_attempt_at);
        expect(goodHealth.last_attempt_at! >= before && goodHealth.last_attempt_at! <= after).toBe(true);
        const badHealth = healthOf(page, bad.uid);
        // Each failed once; its retries wait.
        expect(badHealth).toMatchObject({ pending: 3, last_success_at: null, succeeded_24h: 0, failed_24h: 3 });
        expect(badHealth.failing_since! >= before && badHealth.failing_since! <= after).toBe(true);
        expect(badHealth.last_attempt_at! >= badHealth.failing_since!).toBe(true);
        // By hour: 24 consecutive UTC hours, oldest first, the 3 failures in the hour they were made.
        expectHours(badHealth.hourly_24h, after);
        expect(badHealth.hourly_24h.filter((hour) => hour.failed > 0)).toEqual([{ hour: hourOf(badHealth.failing_since!), succeeded: 0, failed: 3 }]);
        expect(goodHealth.hourly_24h.reduce((sum, hour) => sum + hour.succeeded, 0)).toBe(3);
        expect(healthOf(page, created.json<Endpoint>().id)).toEqual(fresh);

        // The receiver recovers and the retries come due: delivered, and the streak is over.
        await store().query(`UPDATE webhook_deliveries SET next_attempt_at = now() WHERE org_id = $1 AND endpoint_id = $2 AND state = 'pending'`, [tenant.org.id, bad.id]);
        await store().query(`UPDATE webhook_endpoints SET url = $3 WHERE org_id = $1 AND id = $2`, [tenant.org.id, bad.id, `http://127.0.0.1:${receiver.port}/`]);
        await newDeliverer(store()).deliverDue();
        const recovered = (await send('GET', `${PATH}${bad.uid}/`, undefined, tenant.authorization)).json<Endpoint>().health;
        expect(recovered).toMatchObject({ pending: 0, failing_since: null, succeeded_24h: 3, failed_24h: 3 });
        expect(recovered.hourly_24h.reduce((sum, hour) => [sum[0]! + hour.succeeded, sum[1]! + hour.failed], [0, 0])).toEqual([3, 3]);
        expect(recovered.last_success_at).toBe(recovered.last_attempt_at);
        expect(recovered.last_success_at! > badHealth.last_attempt_at!).toBe(true);

        // Attempts older than 24 hours leave the counts, not the times.
        await store().query(`UPDATE webhook_endpoint_stats SET bucket = ((bucket AT TIME ZONE 'UTC') - interval '25 hours') AT TIME ZONE 'UTC' WHERE org_id = $1`, [tenant.org.id]);
        const dayLater = (await send('GET', `${PATH}${bad.uid}/`, undefined, tenant.authorization)).json<Endpoint>().health;
        expect(dayLater).toEqual({ ...recovered, succeeded_24h: 0, failed_24h: 0, hourly_24h: recovered.hourly_24h.map((hour) => ({ ...hour, succeeded: 0, failed: 0 })) });
      } finally {
        await failing.close();
      }
    });
  });

  // Statistics that see one endpoint's backlog as the organization's whole table made the planner count every
  // endpoint's pending deliveries with a sequential scan: 750 ms for a list of 16 endpoints behind 200,000.
  it.skipIf(distributedOnCitus(kind))('counts each endpoint\'s pending deliveries through their index, however the statistics see the backlog', async () => {
    const tenant = await createTenant(store(), 'Backlogged health', 'webhooks');
    const endpoints: TestEndpoint[] = [];
    for (let i = 0; i < 16; i += 1) endpoints.push(await addEndpoint(store(), tenant.org.id, `http://127.0.0.1:${receiver.port}/${i}`));
    await store().query(
      `INSERT INTO webhook_deliveries (org_id, endpoint_id, event_id, event_created_at, next_attempt_at, created_at, updated_at)
       SELECT $1, $2, n, now(), now() + interval '1 hour', now(), now() FROM generate_series(1, 20000) AS n`,
      [tenant.org.id, endpoints[0]!.id],
    );
    await store().exec('ANALYZE webhook_deliveries');
    const [row] = await store().query<{ 'QUERY PLAN': [{ Plan: PlanNode }] | string }>(
      `EXPLAIN (FORMAT JSON) SELECT w.uid, ${HEALTH_COLUMN} FROM webhook_endpoints w WHERE w.org_id = $1 ORDER BY w.created_at, w.id`,
      [tenant.org.id],
    );
    const plan = row!['QUERY PLAN'];
    // The day partition that holds the backlog (migration 025): an empty one may be read whole, at no cost.
    const holding = await store().query<{ name: string }>('SELECT DISTINCT tableoid::regclass::text AS name FROM webhook_deliveries WHERE org_id = $1', [tenant.org.id]);
    const scanned = sequentialScans((typeof plan === 'string' ? (JSON.parse(plan) as [{ Plan: PlanNode }]) : plan)[0].Plan);
    expect(holding).toHaveLength(1);
    expect(scanned).not.toContain(holding[0]!.name);
    const retrieved = await send('GET', `${PATH}${endpoints[0]!.uid}/`, undefined, tenant.authorization);
    expect(retrieved.json<Endpoint>().health.pending).toBe(20000);
  });

  describe('POST /api/webhook_endpoints/{id}/replay/', () => {
    it('sends again, once each, the events whose last attempt in the window failed; a second replay while they wait adds nothing', async () => {
      const tenant = await createTenant(store(), 'Replay', 'webhooks');
      const failing = await startHttpReceiver((_request, response) => response.writeHead(503).end());
      try {
        const endpoint = await addEndpoint(store(), tenant.org.id, `http://127.0.0.1:${failing.port}/`);
        const replay = (body: unknown) => send('POST', `${PATH}${endpoint.uid}/replay/`, body, tenant.authorization);
        await insertCreditLimits(store(), tenant.org.id, [creditLimit(), creditLimit(), creditLimit()]);
        await publishAllEvents(store(), tenant.org.id);
        const since = await databaseNow();
        await newDeliverer(store()).deliverDue();
        const attempted = await databaseNow();

        // Retries are scheduled for all three: they wait, so nothing is added.
        const waiting = await replay({ since });
        expect(waiting.statusCode, waiting.body).toBe(202);
        expect(waiting.json()).toEqual({ object: 'webhook_endpoint_replay', endpoint: endpoint.uid, since, until: expect.any(String), count: 0, has_more: false });
        expect(waiting.json<{ until: string }>().until >= attempted).toBe(true);
        expect(await pending(tenant.org.id, endpoint.id)).toHaveLength(3);

        // Given up (the retries ran out), then the first event delivered by a resend after all.
        await store().query(`UPDATE webhook_deliveries SET state = 'failed' WHERE org_id = $1 AND endpoint_id = $2`, [tenant.org.id, endpoint.id]);
        const [first] = await store().query<{ uid: string }>('SELECT uid FROM events WHERE org_id = $1 ORDER BY id LIMIT 1', [tenant.org.id]);
        await store().query(`UPDATE webhook_endpoints SET url = $3 WHERE org_id = $1 AND id = $2`, [tenant.org.id, endpoint.id, `http://127.0.0.1:${receiver.port}/`]);
        expect((await send('POST', `/api/events/${first!.uid}/resend/`, { endpoint: endpoint.uid }, tenant.authorization)).statusCode).toBe(202);
        await newDeliverer(store()).deliverDue();
        await store().query(`UPDATE webhook_endpoints SET url = $3 WHERE org_id = $1 AND id = $2`, [tenant.org.id, endpoint.id, `http://127.0.0.1:${failing.port}/`]);
        expect(await pending(tenant.org.id, endpoint.id)).toEqual([]);

        // A window that ends before the attempts, or begins after them, finds nothing.
        expect((await replay({ since: '2020-01-01', until: '2020-01-02' })).json()).toMatchObject({ count: 0, since: '2020-01-01T00:00:00.000000Z', until: '2020-01-02T23:59:59.999999Z' });
        expect((await replay({ since: await databaseNow() })).json()).toMatchObject({ count: 0 });
        expect(await pending(tenant.org.id, endpoint.id)).toEqual([]);

        const replayed = await replay({ since, until: attempted });
        expect(replayed.statusCode, replayed.body).toBe(202);
        expect(replayed.json()).toEqual({ object: 'webhook_endpoint_replay', endpoint: endpoint.uid, since, until: attempted, count: 2, has_more: false });
        const queued = await pending(tenant.org.id, endpoint.id);
        expect(queued).toHaveLength(2);
        expect(queued.every((row) => row.due)).toBe(true);

        const again = await replay({ since, until: attempted });
        expect(again.json()).toMatchObject({ count: 0 });
        expect(await pending(tenant.org.id, endpoint.id)).toEqual(queued);
      } finally {
        await failing.close();
      }
    });

    it('queues a large window in batches (has_more: the same replay again queues the next), and only the types the endpoint takes now', async () => {
      const tenant = await createTenant(store(), 'Replay batches', 'webhooks');
      const failing = await startHttpReceiver((_request, response) => response.writeHead(503).end());
      try {
        const endpoint = await addEndpoint(store(), tenant.org.id, `http://127.0.0.1:${failing.port}/`);
        await insertCreditLimits(store(), tenant.org.id, [creditLimit(), creditLimit(), creditLimit()]);
        await publishAllEvents(store(), tenant.org.id);
        const since = await databaseNow();
        await newDeliverer(store()).deliverDue();
        await store().query(`UPDATE webhook_deliveries SET state = 'failed' WHERE org_id = $1 AND endpoint_id = $2`, [tenant.org.id, endpoint.id]);
        const window = { since, until: await databaseNow() };

        const first = await replayFailedEvents(store(), tenant.org.id, endpoint.uid, window, undefined, 2);
        expect(first).toMatchObject({ count: 2, has_more: true });
        expect(await pending(tenant.org.id, endpoint.id)).toHaveLength(2);
        const second = await replayFailedEvents(store(), tenant.org.id, endpoint.uid, window, undefined, 2);
        expect(second).toMatchObject({ count: 1, has_more: false });
        expect(await pending(tenant.org.id, endpoint.id)).toHaveLength(3);

        // Failed again, and the endpoint no longer takes credit_limit.*: nothing of that type is sent again.
        await store().query(`UPDATE webhook_deliveries SET state = 'failed' WHERE org_id = $1 AND endpoint_id = $2`, [tenant.org.id, endpoint.id]);
        await store().query(`UPDATE webhook_endpoints SET enabled_events = ARRAY['loan.*'] WHERE org_id = $1 AND id = $2`, [tenant.org.id, endpoint.id]);
        expect(await replayFailedEvents(store(), tenant.org.id, endpoint.uid, window)).toMatchObject({ count: 0, has_more: false });
        expect(await pending(tenant.org.id, endpoint.id)).toEqual([]);
      } finally {
        await failing.close();
      }
    });

    it('refuses a bad window with a 422 naming the member, a disabled endpoint with a 422, and is a 404 for another organization', async () => {
      const endpoint = await addEndpoint(store(), owner.org.id, `http://127.0.0.1:${receiver.port}/`);
      const replay = (body: unknown, authorization = owner.authorization) => send('POST', `${PATH}${endpoint.uid}/replay/`, body, authorization);
      const refused = async (body: unknown, param: string) => {
        const response = await replay(body);
        expect(response.statusCode, response.body).toBe(422);
        expect(response.headers['content-type']).toContain('application/problem+json');
        expect(response.json<{ errors: { param: string }[] }>().errors.map((error) => error.param)).toContain(param);
        return response;
      };
      expect((await refused({ since: 'yesterday' }, 'since')).body).toContain("'yesterday'");
      await refused({}, 'since');
      await refused({ until: '2026-01-01' }, 'since');
      await refused({ since: 20260101 }, 'since');
      await refused({ since: '2026-01-02', until: '2026-01-01T23:59:59Z' }, 'until');
      await refused({ since: '2026-02-30' }, 'since');
      await refused({ since: '2026-01-01', colour: 'red' }, 'colour');
      expect((await replay('{"since":')).statusCode).toBe(400);
      // The same instant at both ends, sub-microsecond digits rounding inwards: a window of one microsecond.
      expect((await replay({ since: '2026-01-01T00:00:00.0000001Z', until: '2026-01-01T00:00:00.0000019Z' })).json()).toMatchObject({
        since: '2026-01-01T00:00:00.000001Z',
        until: '2026-01-01T00:00:00.000001Z',
      });

      expect((await replay({ since: '2026-01-01' }, other.authorization)).statusCode).toBe(404);
      expect((await send('POST', `${PATH}we_missing/replay/`, { since: '2026-01-01' })).statusCode).toBe(404);
      await store().query(`UPDATE webhook_endpoints SET disabled = true, disabled_reason = 'requested' WHERE org_id = $1 AND id = $2`, [owner.org.id, endpoint.id]);
      expect((await replay({ since: '2026-01-01' })).statusCode).toBe(422);
    });
  });

  describe('POST /api/events/{id}/resend/', () => {
    it('resending an event 2,000 times leaves one delivery of it waiting per endpoint', async () => {
      const tenant = await createTenant(store(), 'Resends', 'webhooks');
      const endpoints = [];
      for (let i = 0; i < 16; i += 1) endpoints.push(await addEndpoint(store(), tenant.org.id, `http://127.0.0.1:${receiver.port}/${i}`));
      await insertCreditLimits(store(), tenant.org.id, [creditLimit()]);
      await publishAllEvents(store(), tenant.org.id);
      const [event] = await store().query<{ uid: string }>('SELECT uid FROM events WHERE org_id = $1', [tenant.org.id]);
      // Concurrently, twenty at a time: the folding holds across transactions, not only one after another.
      for (let sent = 0; sent < 2000; sent += 20) {
        const answers = await Promise.all(Array.from({ length: 20 }, () => send('POST', `/api/events/${event!.uid}/resend/`, {}, tenant.authorization)));
        expect(answers.map((answer) => answer.statusCode)).toEqual(Array.from({ length: 20 }, () => 202));
      }
      const [counted] = await store().query<{ deliveries: number; endpoints: number }>(
        `SELECT count(*)::int AS deliveries, count(DISTINCT endpoint_id)::int AS endpoints FROM webhook_deliveries WHERE org_id = $1`,
        [tenant.org.id],
      );
      expect(counted).toEqual({ deliveries: 16, endpoints: 16 });
    });
  });

  describe('POST /api/webhook_endpoints/{id}/test/', () => {
    it('delivers a signed webhook_endpoint.test that standardwebhooks verifies, logs no event and records no attempt', async () => {
      const created = await send('POST', PATH, { url: `http://127.0.0.1:${receiver.port}/test`, enabled_events: ['*'] });
      expect(created.statusCode, created.body).toBe(201);
      const endpoint = created.json<Endpoint>();
      const eventsBefore = (await send('GET', '/api/events/', undefined, basicAuthorization(owner.org.uid, owner.apiKey))).json<{ count: number }>().count;
      const received = receiver.requests.length;

      const tested = await send('POST', `${PATH}${endpoint.id}/test/`);
      expect(tested.statusCode, tested.body).toBe(200);
      const outcome = tested.json<{ event: string; duration_ms: number }>();
      expect(outcome).toEqual({
        object: 'webhook_endpoint_test',
        endpoint: endpoint.id,
        event: expect.stringMatching(/^evt_test_[0-9a-f]{32}$/),
        ok: true,
        status_code: 200,
        duration_ms: expect.any(Number),
        error: null,
        response_body: 'answered 200',
      });
      expect(receiver.requests).toHaveLength(received + 1);
      const request = receiver.requests.at(-1)!;
      const headers = Object.fromEntries(Object.entries(request.headers).map(([name, value]) => [name, String(value)]));
      const delivered = new Webhook(endpoint.secret!).verify(request.body, headers) as Record<string, unknown>;
      expect(request.headers['webhook-id']).toBe(outcome.event);
      expect(delivered).toMatchObject({ id: outcome.event, object: 'event', type: 'webhook_endpoint.test', data: { object: { id: endpoint.id, object: 'webhook_endpoint' } } });
      expect(delivered.request_id).toBe(tested.headers['x-request-id']);

      expect((await send('GET', '/api/events/')).json<{ count: number }>().count).toBe(eventsBefore);
      expect((await send('GET', `${PATH}${endpoint.id}/deliveries/`)).json<{ count: number }>().count).toBe(0);
      expect((await endpointOf(endpoint.id)).health).toEqual(endpoint.health);
    });

    it('answers a failing receiver’s outcome, and a refused address’s, without recording either', async () => {
      const endpoint = await addEndpoint(store(), owner.org.id, `http://127.0.0.1:${receiver.port}/failing`);
      answer.status = 500;
      try {
        const failed = await send('POST', `${PATH}${endpoint.uid}/test/`, {});
        expect(failed.statusCode, failed.body).toBe(200);
        expect(failed.json()).toMatchObject({ ok: false, status_code: 500, error: 'the receiver answered 500', response_body: 'answered 500' });
      } finally {
        answer.status = 200;
      }
      // The cloud metadata address stays refused even where private addresses are allowed.
      const metadata = await addEndpoint(store(), owner.org.id, 'http://169.254.169.254/latest/');
      const refused = await send('POST', `${PATH}${metadata.uid}/test/`);
      expect(refused.json()).toMatchObject({ ok: false, status_code: null, error: expect.stringContaining('cloud metadata') });
      expect((await endpointOf(endpoint.uid)).health).toMatchObject({ last_attempt_at: null, failing_since: null, failed_24h: 0 });
    });

    it('needs the webhooks scope, is a 404 for another organization, and takes no member', async () => {
      const endpoint = await addEndpoint(store(), owner.org.id, `http://127.0.0.1:${receiver.port}/`);
      const writer = await createApiKey(store(), owner.org.uid, undefined, 'write');
      const reader = await createApiKey(store(), owner.org.uid, undefined, 'read');
      for (const key of [writer, reader]) {
        const authorization = basicAuthorization(owner.org.uid, key.key);
        expect((await send('POST', `${PATH}${endpoint.uid}/test/`, undefined, authorization)).statusCode).toBe(403);
        expect((await send('POST', `${PATH}${endpoint.uid}/replay/`, { since: '2026-01-01' }, authorization)).statusCode).toBe(403);
      }
      const received = receiver.requests.length;
      expect((await send('POST', `${PATH}${endpoint.uid}/test/`, undefined, other.authorization)).statusCode).toBe(404);
      const withMember = await send('POST', `${PATH}${endpoint.uid}/test/`, { url: 'http://127.0.0.1:9/' });
      expect(withMember.statusCode).toBe(422);
      // It says the body takes no member, not "it accepts " and an empty list.
      expect(withMember.json<{ errors: { param: string; detail: string }[] }>().errors).toEqual([
        { param: 'url', detail: '"url" is not a member of this body; it takes none (send {} or nothing)' },
      ]);
      expect(receiver.requests.length).toBe(received);
    });
  });
});
