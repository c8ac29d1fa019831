import type { FastifyInstance } from 'fastify';
import { buildApp } from '../helpers/app.js';
import { createApiKey } from '../../src/auth/api-keys.js';
import { dropExpiredPartitions, ensureDayPartitions } from '../../src/events/event-partitions.js';
import { pruneOrganizationEvents } from '../../src/events/event-prune.js';
import { publishAllEvents } from '../../src/events/publish-events.js';
import type { Store } from '../../src/store/store.js';
import { creditLimit, insertCreditLimits } from '../helpers/records.js';
import { basicAuthorization, createTenant } from '../helpers/tenants.js';
import { postEntry } from '../helpers/writes.js';
import { LOCAL_POLICY, newDeliverer, TEST_BOX } from '../webhooks/deliverer-helpers.js';
import { startHttpReceiver } from '../webhooks/receivers.js';

/**
 * The statements that find which organizations have work, fleet-wide by
 * design (docs/scaling.md "Events and webhooks"): the publisher's sweep, the
 * deliverer's round and the prune's list. Every other statement names one
 * organization.
 */
export const FLEET_WIDE_STATEMENTS: readonly RegExp[] = [
  /^SELECT DISTINCT org_id::text AS org_id FROM event_outbox LIMIT \$1$/,
  /^SELECT DISTINCT w\.org_id FROM webhook_endpoints w CROSS JOIN LATERAL \(SELECT 1 FROM webhook_deliveries d/,
  /^SELECT org_id::text AS org_id FROM event_streams ORDER BY org_id$/,
  // Whether a day of deliveries past the retention still holds a pending one (src/events/event-partitions.ts).
  /^SELECT EXISTS \(SELECT 1 FROM webhook_deliveries_p\d{8} WHERE state = 'pending'\) AS pending$/,
];

/**
 * Every statement shape of events and webhooks, run through `recorded` on a
 * fresh tenant: writes that record events (HTTP, with an Idempotency-Key),
 * their publication with deliveries fanned out, the events list's shapes
 * (filters, numbered and cursor pages, retrieve), the endpoint routes
 * (create, list, retrieve, update, rotate, delete), a deliverer's round
 * against one receiver that answers 204 and one that answers 500 (claims,
 * attempts recorded and checked, a retry scheduled), the attempts list with the endpoints' health, a
 * resend, a replay, a test delivery and the prune. Throws when an answer is not what it should be.
 */
export async function runEventWorkload(store: Store, recorded: Store): Promise<void> {
  const tenant = await createTenant(store, 'Evented Lender', 'write');
  const hooks = basicAuthorization(tenant.org.uid, (await createApiKey(store, tenant.org.uid, undefined, 'webhooks')).key);
  await insertCreditLimits(store, tenant.org.id, [creditLimit({ uid: 'cl_ev', entity: 'ent_ev', capacity: '100.00' })]);
  await publishAllEvents(store, tenant.org.id); // the limit's credit_limit.created, before any endpoint
  const ok = await startHttpReceiver((_, response) => response.writeHead(204).end());
  const failing = await startHttpReceiver((_, response) => response.writeHead(500).end('down'));
  const app = await buildApp({ store: recorded, webhooks: { secretBox: TEST_BOX, destinations: LOCAL_POLICY } });
  try {
    const call = (method: 'GET' | 'POST' | 'DELETE', url: string, body?: unknown) =>
      expectOk(app, method, url, hooks, body);
    const okEndpoint = (await call('POST', '/api/webhook_endpoints/', { url: `http://127.0.0.1:${ok.port}/hooks`, enabled_events: ['*'] })).id as string;
    const failingEndpoint = (await call('POST', '/api/webhook_endpoints/', { url: `http://127.0.0.1:${failing.port}/hooks`, enabled_events: ['credit_limit.*'] }))
      .id as string;
    await call('GET', '/api/webhook_endpoints/');
    await call('GET', `/api/webhook_endpoints/${okEndpoint}/`);
    await call('POST', `/api/webhook_endpoints/${failingEndpoint}/`, { description: 'fails on purpose' });
    await call('POST', `/api/webhook_endpoints/${failingEndpoint}/rotate_secret/`, {});

    for (const key of ['ev-1', 'ev-1', 'ev-2']) {
      const response = await postEntry(app, 'drawdown', 'cl_ev', { amount: '1.00' }, { authorization: tenant.authorization, idempotencyKey: key });
      if (response.statusCode !== 201) throw new Error(`drawdown answered ${response.statusCode}: ${response.body}`);
    }
    const published = await publishAllEvents(recorded, tenant.org.id);
    if (published !== 4) throw new Error(`published ${published} events for two drawdowns, not 4 (a limit update and an entry each)`);

    const page = await call('GET', '/api/events/');
    const events = page.items as { id: string; type: string }[];
    for (const query of ['type=credit_limit.updated', 'type=ledger_entry.*', 'object=cl_ev', 'created_from=2020-01-01T00:00:00Z', 'page=1', 'cursor=', 'order_by=-created_at']) {
      await call('GET', `/api/events/?${query}`);
    }
    const walk = await call('GET', '/api/events/?cursor=');
    if (typeof walk.next === 'string') await call('GET', walk.next);
    await call('GET', `/api/events/${events[0]!.id}/`);

    const deliverer = newDeliverer(recorded);
    await deliverer.deliverDue();
    if (ok.requests.length !== 4) throw new Error(`the receiver was sent ${ok.requests.length} events, not 4`);
    if (failing.requests.length !== 2) throw new Error(`the failing receiver was tried ${failing.requests.length} times, not 2`);
    // Each attempt recorded (a deliverer logs a failure to record and leaves the claim to expire: that would pass unseen).
    const states = await store.query<{ state: string; attempts: number; n: number }>(
      `SELECT state, attempts, count(*)::int AS n FROM webhook_deliveries WHERE org_id = $1 GROUP BY state, attempts ORDER BY state`,
      [tenant.org.id],
    );
    if (JSON.stringify(states) !== JSON.stringify([{ state: 'delivered', attempts: 1, n: 4 }, { state: 'pending', attempts: 1, n: 2 }])) {
      throw new Error(`the deliveries after one round are ${JSON.stringify(states)}: not 4 delivered and 2 pending again, each attempted once`);
    }
    await call('GET', `/api/webhook_endpoints/${failingEndpoint}/deliveries/`);
    await call('GET', `/api/webhook_endpoints/${okEndpoint}/deliveries/?page=1`);
    await call('GET', `/api/webhook_endpoints/${failingEndpoint}/deliveries/?status=failed&type=loan.*`);
    await call('POST', `/api/events/${events[0]!.id}/resend/`, {});
    await call('GET', '/api/webhook_endpoints/');
    const replay = await call('POST', `/api/webhook_endpoints/${failingEndpoint}/replay/`, { since: '2020-01-01' });
    if (replay.count !== 0) throw new Error(`a replay while the failed events wait for their retry queued ${String(replay.count)}, not 0`);
    const test = await call('POST', `/api/webhook_endpoints/${okEndpoint}/test/`, {});
    if (test.ok !== true) throw new Error(`the test delivery to the 204 receiver answered ${JSON.stringify(test)}`);
    await deliverer.deliverDue();
    await deliverer.stop();

    await call('DELETE', `/api/webhook_endpoints/${failingEndpoint}/`);
    // The day partitions' upkeep: made ahead (a repeat makes none), none past a 10-year retention to drop.
    await ensureDayPartitions(recorded);
    await dropExpiredPartitions(recorded, 3650);
    const pruned = await pruneOrganizationEvents(recorded, tenant.org.id, 0);
    if (pruned.events !== 5) throw new Error(`the prune with 0 days' retention removed ${pruned.events} events, not 5`);
  } finally {
    await app.close();
    await ok.close();
    await failing.close();
  }
}

async function expectOk(app: FastifyInstance, method: 'GET' | 'POST' | 'DELETE', url: string, authorization: string, body?: unknown): Promise<Record<string, unknown>> {
  const response = await app.inject({
    method,
    url,
    headers: { authorization, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
  });
  if (response.statusCode >= 300) throw new Error(`${method} ${url} answered ${response.statusCode}: ${response.body}`);
  return response.body === '' ? {} : (JSON.parse(response.body) as Record<string, unknown>);
}
