import { randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../../src/store/store.js';
import { SecretBox } from '../../src/webhooks/secret-box.js';
import { postgresUrlWithSchema } from '../helpers/cli.js';
import { creditLimit, insertCreditLimits } from '../helpers/records.js';
import { spawnServer, type SpawnedServer } from '../helpers/spawn-server.js';
import { openPostgresTestStore } from '../helpers/stores.js';
import { createTenant } from '../helpers/tenants.js';
import { attemptsOf, deliveriesOf, eventually, insertEndpoint } from './deliverer-helpers.js';
import { startHttpReceiver, type Receiver } from './receivers.js';

// Two `serve` processes on one database, one after the other's death: PostgreSQL.
const databaseUrl = process.env.DATABASE_URL ?? '';
describe.runIf(/^postgres(ql)?:/.test(databaseUrl))('a serve node SIGKILLed in the middle of a delivery (on postgres)', () => {
  let store: Store;
  let receiver: Receiver | undefined;
  const servers: SpawnedServer[] = [];
  beforeAll(async () => {
    store = await openPostgresTestStore(databaseUrl, 2);
  });
  afterAll(async () => {
    for (const server of servers) if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL');
    await receiver?.close();
    await store.close();
  });

  it('leaves the attempt to another node once its claim expires: the event is delivered, signed, and nothing is lost', async () => {
    const key = randomBytes(32);
    const held: ServerResponse[] = [];
    let holding = true;
    receiver = await startHttpReceiver((_request, response) => {
      if (holding) held.push(response);
      else response.writeHead(200).end();
    });
    const tenant = await createTenant(store, 'Killed', 'write');
    const endpoint = await insertEndpoint(store, tenant.org.id, `http://127.0.0.1:${receiver.port}/hook`, ['credit_limit.created'], SecretBox.fromKey(key));
    const [{ schema } = { schema: '' }] = await store.query<{ schema: string }>('SELECT current_schema() AS schema');
    const env = {
      DATABASE_URL: postgresUrlWithSchema(databaseUrl, schema),
      WEBHOOK_ALLOW_PRIVATE: '1',
      WEBHOOK_SECRET_KEY: key.toString('hex'),
      WEBHOOK_CLAIM_MS: '11000',
    };
    const first = await spawnServer([], env);
    servers.push(first);
    // A change from outside the node (as the CLI makes): its sweep publishes it, its deliverer claims and sends it.
    await insertCreditLimits(store, tenant.org.id, [creditLimit({ uid: 'cl_killed' })]);
    await eventually(() => receiver!.requests.length === 1, 60_000, 'the first node’s attempt');
    const [claimed] = await deliveriesOf(store, tenant.org.id);
    expect(claimed).toMatchObject({ state: 'pending', attempts: 0 });
    expect(claimed!.claimed_by).not.toBeNull();
    first.child.kill('SIGKILL');
    await first.exited;
    holding = false;

    const second = await spawnServer([], env);
    servers.push(second);
    await eventually(async () => (await deliveriesOf(store, tenant.org.id))[0]?.state === 'delivered', 90_000, 'the delivery by the second node');
    expect(receiver.requests).toHaveLength(2);
    const [cut, delivered] = receiver.requests;
    expect(delivered!.headers['webhook-id']).toBe(cut!.headers['webhook-id']);
    const headers = Object.fromEntries(Object.entries(delivered!.headers).map(([name, value]) => [name, String(value)]));
    const event = new Webhook(endpoint.secret).verify(delivered!.body, headers) as { type: string; data: { object: Record<string, unknown> } };
    expect(event.type).toBe('credit_limit.created');
    // The cut attempt left no record: the one recorded is the second node's.
    expect((await attemptsOf(store, tenant.org.id)).map((a) => [a.attempt, a.status_code])).toEqual([[1, 200]]);
    const [after] = await deliveriesOf(store, tenant.org.id);
    expect(after).toMatchObject({ state: 'delivered', attempts: 1, claimed_by: null });
    for (const response of held) response.destroy();
  }, 240_000);
});
