import type { FastifyInstance } from 'fastify';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { buildApp } from '../helpers/app.js';
import { publishAllEvents } from '../../src/events/publish-events.js';
import { runCli } from '../helpers/cli.js';
import { creditLimit, insertCreditLimits } from '../helpers/records.js';
import { describeEachStore } from '../helpers/stores.js';
import { createTenant, type Tenant } from '../helpers/tenants.js';
import { LOCAL_POLICY, TEST_BOX } from '../webhooks/deliverer-helpers.js';
import { startHttpReceiver, type Receiver } from '../webhooks/receivers.js';

// The commands call the API of a running server only: DATABASE_URL points nowhere.
const NO_DATABASE = 'postgres://postgres@127.0.0.1:1/none';

describeEachStore('webhooks endpoints, resend, replay and test on the command line', (store) => {
  let app: FastifyInstance;
  let apiUrl = '';
  let tenant: Tenant;
  let receiver: Receiver;
  const cli = (args: string[], key = tenant.apiKey) => runCli(['webhooks', ...args, '--org', tenant.org.uid, '--api-url', apiUrl], NO_DATABASE, undefined, { LENDING_API_KEY: key });
  const createEndpoint = async (path: string): Promise<string> => {
    const response = await app.inject({
      method: 'POST',
      url: '/api/webhook_endpoints/',
      headers: { authorization: tenant.authorization, 'content-type': 'application/json' },
      payload: JSON.stringify({ url: `http://127.0.0.1:${receiver.port}${path}`, enabled_events: ['*'] }),
    });
    expect(response.statusCode, response.body).toBe(201);
    return response.json<{ id: string }>().id;
  };

  beforeAll(async () => {
    app = await buildApp({ store: store(), webhooks: { secretBox: TEST_BOX, destinations: LOCAL_POLICY } });
    await app.listen({ port: 0, host: '127.0.0.1' });
    apiUrl = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
    tenant = await createTenant(store(), 'CLI hooks', 'webhooks');
    receiver = await startHttpReceiver((request, response) => response.writeHead(request.url === '/failing' ? 500 : 204).end());
  });
  afterAll(async () => {
    await receiver.close();
    await app.close();
  });

  it('lists the endpoints with their health, tests one (exit 1 when the receiver fails), resends and replays', async () => {
    const good = await createEndpoint('/good');
    const failing = await createEndpoint('/failing');

    const listed = await cli(['endpoints', '--json']);
    expect(listed.code, listed.stderr).toBe(0);
    const endpoints = JSON.parse(listed.stdout) as { id: string; health: { pending: number } }[];
    expect(endpoints.map((endpoint) => endpoint.id)).toEqual([good, failing]);
    expect(endpoints[0]!.health).toEqual({ pending: 0, last_attempt_at: null, last_success_at: null, failing_since: null, succeeded_24h: 0, failed_24h: 0, hourly_24h: expect.any(Array) });
    const human = await cli(['endpoints']);
    expect(human.stdout).toContain(`${good}  http://127.0.0.1:${receiver.port}/good`);
    expect(human.stdout).toContain('0 pending; last 24 h: 0 succeeded, 0 failed; last success never');

    const passed = await cli(['test', good]);
    expect(passed.code, passed.stderr).toBe(0);
    expect(passed.stdout).toMatch(new RegExp(`^${good}: test delivery answered 204 in \\d+ ms\\n$`));
    const refused = await cli(['test', failing, '--json']);
    expect(refused.code).toBe(1);
    expect(JSON.parse(refused.stdout)).toMatchObject({ object: 'webhook_endpoint_test', ok: false, status_code: 500 });
    expect(receiver.requests.filter((request) => request.body.includes('"webhook_endpoint.test"'))).toHaveLength(2);

    await insertCreditLimits(store(), tenant.org.id, [creditLimit()]);
    await publishAllEvents(store(), tenant.org.id);
    const [event] = await store().query<{ uid: string }>('SELECT uid FROM events WHERE org_id = $1', [tenant.org.id]);
    const resent = await cli(['resend', event!.uid, '--endpoint', good]);
    expect(resent.code, resent.stderr).toBe(0);
    expect(resent.stdout).toBe(`${event!.uid} goes again to ${good}\n`);

    const replayed = await cli(['replay', failing, '--since', '2026-01-01', '--until', '2026-01-02', '--json']);
    expect(replayed.code, replayed.stderr).toBe(0);
    expect(JSON.parse(replayed.stdout)).toEqual({ object: 'webhook_endpoint_replay', endpoint: failing, since: '2026-01-01T00:00:00.000000Z', until: '2026-01-02T23:59:59.999999Z', count: 0, has_more: false });
  });

  it('says what the server refused, and needs a key', async () => {
    const endpoint = await createEndpoint('/good');
    const badSince = await cli(['replay', endpoint, '--since', 'yesterday']);
    expect(badSince.code).toBe(1);
    expect(badSince.stderr).toContain('answered 422 invalid_body: since must be an ISO 8601 timestamp');
    const unknown = await cli(['test', 'we_missing']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('answered 404 not_found');
    const noKey = await cli(['endpoints'], '');
    expect(noKey.code).not.toBe(0);
    expect(noKey.stderr).toContain('--key or LENDING_API_KEY');
  });
});
