import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publishAllEvents } from '../../src/events/publish-events.js';
import { PostgresStore } from '../../src/store/postgres-store.js';
import type { Store } from '../../src/store/store.js';
import { creditLimit, insertCreditLimits } from '../helpers/records.js';
import { openPostgresTestStore } from '../helpers/stores.js';
import { createTenant } from '../helpers/tenants.js';
import { deliveriesOf, eventually, insertEndpoint, newDeliverer } from './deliverer-helpers.js';
import { startHttpReceiver } from './receivers.js';

const EVENTS = 30;
const PER_ENDPOINT = 3;
const databaseUrl = process.env.DATABASE_URL ?? '';

// Two nodes, each with its own pool, on one database: PostgreSQL (PGlite is one process's).
describe.runIf(/^postgres(ql)?:/.test(databaseUrl))('two deliverers on one PostgreSQL', () => {
  let store: Store;
  let other: Store;
  beforeAll(async () => {
    store = await openPostgresTestStore(databaseUrl, 4);
    const [{ schema } = { schema: '' }] = await store.query<{ schema: string }>('SELECT current_schema() AS schema');
    other = new PostgresStore(databaseUrl, { poolSize: 4, searchPath: schema });
  });
  afterAll(async () => {
    await other?.close();
    await store?.close();
  });

  it('make each attempt once, and together keep an endpoint to N attempts in flight', async () => {
    const open = new Map<string, number>();
    const most = new Map<string, number>();
    const receiver = await startHttpReceiver((request, response) => {
      open.set(request.url, (open.get(request.url) ?? 0) + 1);
      most.set(request.url, Math.max(most.get(request.url) ?? 0, open.get(request.url)!));
      setTimeout(() => {
        open.set(request.url, open.get(request.url)! - 1);
        response.writeHead(200).end();
      }, 30);
    });
    const tenant = await createTenant(store, 'Two nodes', 'write');
    for (const path of ['a', 'b']) await insertEndpoint(store, tenant.org.id, `http://127.0.0.1:${receiver.port}/${path}`);
    await insertCreditLimits(store, tenant.org.id, Array.from({ length: EVENTS }, () => creditLimit()));
    await publishAllEvents(store, tenant.org.id);
    const nodes = [newDeliverer(store, { maxInFlightPerEndpoint: PER_ENDPOINT, pollIntervalMs: 20 }), newDeliverer(other, { maxInFlightPerEndpoint: PER_ENDPOINT, pollIntervalMs: 20 })];
    try {
      for (const node of nodes) node.start();
      await eventually(async () => (await deliveriesOf(store, tenant.org.id)).every((d) => d.state === 'delivered'), 60_000, 'every delivery');
      await Promise.all(nodes.map((node) => node.idle()));
    } finally {
      await Promise.all(nodes.map((node) => node.stop()));
      await receiver.close();
    }
    const received = receiver.requests.map((request) => `${request.url} ${String(request.headers['webhook-id'])}`);
    expect(received).toHaveLength(2 * EVENTS);
    expect(new Set(received).size).toBe(2 * EVENTS);
    expect(Math.max(...most.values())).toBeLessThanOrEqual(PER_ENDPOINT);
    const [{ attempts } = { attempts: 0 }] = await store.query<{ attempts: number }>('SELECT count(*)::int AS attempts FROM webhook_attempts WHERE org_id = $1', [tenant.org.id]);
    expect(attempts).toBe(2 * EVENTS);
  });
});
