import { randomBytes, randomUUID } from 'node:crypto';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../helpers/app.js';
import { createLogger } from '../../src/logger.js';
import type { Store } from '../../src/store/store.js';
import { MAX_EARLIER_SECRETS, signingSecretsOf, type SealedEndpointSecrets } from '../../src/webhooks/endpoint-secrets.js';
import { SecretBox } from '../../src/webhooks/secret-box.js';
import { logBuffer } from '../helpers/log-buffer.js';
import { describeEachStore } from '../helpers/stores.js';
import { createTenant, type Tenant } from '../helpers/tenants.js';

const PATH = '/api/webhook_endpoints/';
const EVENT_UID = `evt_${'0123456789abcdef'.repeat(2)}`;
const SECRET = /^whsec_[A-Za-z0-9+/]{43}=$/;

type Endpoint = { id: string; object: string; url: string; description: string | null; enabled_events: string[]; disabled: boolean; disabled_reason: string | null; created_at: string; updated_at: string; secret?: string };

function send(app: FastifyInstance, tenant: Tenant, method: 'GET' | 'POST' | 'DELETE', url: string, body?: unknown): Promise<LightMyRequestResponse> {
  return app.inject({
    method,
    url,
    headers: { authorization: tenant.authorization, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
  });
}

async function create(app: FastifyInstance, tenant: Tenant, body: Record<string, unknown> = {}): Promise<Endpoint> {
  const response = await send(app, tenant, 'POST', PATH, { url: `https://hooks.example.com/${randomUUID()}`, enabled_events: ['*'], ...body });
  expect(response.statusCode, response.body).toBe(201);
  return response.json<Endpoint>();
}

/** An event of the organization and a pending delivery of it to the endpoint, as the publisher would create them. */
async function pendingDelivery(db: Store, orgId: string, endpointUid: string, type = 'loan.created'): Promise<string> {
  // After the organization's last event (created_at is unique in an organization's log), read first: Citus takes no subquery in an INSERT.
  const [clock] = await db.query<{ at: string }>(
    `SELECT greatest(clock_timestamp(), max(created_at) + interval '1 microsecond')::text AS at FROM events WHERE org_id = $1`,
    [orgId],
  );
  const [event] = await db.query<{ id: string }>(
    `INSERT INTO events (org_id, uid, type, object_uid, data_object, created_at)
     VALUES ($1, $2, $3, 'ln_1', '{}'::jsonb, $4::timestamptz) RETURNING id::text AS id`,
    [orgId, `evt_${randomUUID().replaceAll('-', '')}`, type, clock!.at],
  );
  const [delivery] = await db.query<{ id: string }>(
    `INSERT INTO webhook_deliveries (org_id, endpoint_id, event_id, event_created_at, next_attempt_at, created_at, updated_at)
     SELECT $1, w.id, $3, $4::timestamptz, now(), now(), now() FROM webhook_endpoints w WHERE w.org_id = $1 AND w.uid = $2 RETURNING id::text AS id`,
    [orgId, endpointUid, event!.id, clock!.at],
  );
  return delivery!.id;
}

async function deliveryState(db: Store, orgId: string, id: string): Promise<string> {
  const [row] = await db.query<{ state: string }>('SELECT state FROM webhook_deliveries WHERE org_id = $1 AND id = $2', [orgId, id]);
  return row!.state;
}

describeEachStore('webhook endpoints', (store) => {
  const box = SecretBox.fromKey(randomBytes(32));
  const log = logBuffer();
  let app: FastifyInstance;
  let owner: Tenant;
  let other: Tenant;

  beforeAll(async () => {
    app = await buildApp({ store: store(), loggerInstance: createLogger('trace', log.stream), webhooks: { secretBox: box } });
    owner = await createTenant(store(), 'Hooks', 'webhooks');
    other = await createTenant(store(), 'Other hooks', 'webhooks');
  });
  afterAll(async () => {
    await app.close();
  });

  describe('POST /api/webhook_endpoints/', () => {
    it('answers 201 with the endpoint and its secret, which no later answer or log line shows', async () => {
      const created = await create(app, owner, { url: 'https://hooks.example.com/lending', enabled_events: ['loan.*', 'credit_limit.updated', 'loan.*'], description: 'Loan book' });
      expect(created).toMatchObject({
        object: 'webhook_endpoint',
        url: 'https://hooks.example.com/lending',
        description: 'Loan book',
        enabled_events: ['loan.*', 'credit_limit.updated'],
        disabled: false,
        disabled_reason: null,
      });
      expect(created.id).toMatch(/^we_[0-9a-f]{32}$/);
      expect(created.secret).toMatch(SECRET);
      const secret = created.secret!;

      const retrieved = await send(app, owner, 'GET', `${PATH}${created.id}/`);
      expect(retrieved.statusCode).toBe(200);
      const { secret: _secret, ...withoutSecret } = created;
      expect(retrieved.json()).toEqual(withoutSecret);
      const listed = await send(app, owner, 'GET', PATH);
      expect(listed.json().items).toContainEqual(withoutSecret);
      for (const answer of [retrieved, listed]) expect(answer.body).not.toContain(secret.slice('whsec_'.length));
      expect(log.text()).toContain(created.id);
      expect(log.text()).not.toContain(secret.slice('whsec_'.length));
    });

    it('stores the secret sealed: the column is not the secret, and opens to it only with the key', async () => {
      const created = await create(app, owner);
      const [row] = await store().query<{ secret_ciphertext: Uint8Array }>('SELECT secret_ciphertext FROM webhook_endpoints WHERE org_id = $1 AND uid = $2', [owner.org.id, created.id]);
      const sealed = Buffer.from(row!.secret_ciphertext);
      expect(sealed.toString('latin1')).not.toContain(created.secret!.slice('whsec_'.length, 20));
      expect(box.open(sealed)).toBe(created.secret);
      expect(() => SecretBox.fromKey(randomBytes(32)).open(sealed)).toThrow();
    });

    it('refuses a URL the destination policy refuses, with a 422 naming url and the reason', async () => {
      const cases: [string, RegExp][] = [
        ['http://hooks.example.com/', /https:\/\//],
        ['https://127.0.0.1/hook', /loopback/],
        ['https://169.254.169.254/latest/meta-data/', /metadata/],
        ['https://user:password@hooks.example.com/', /user name or password/],
        ['https://localhost:8443/', /loopback/],
        ['not a url', /absolute URL/],
      ];
      for (const [url, reason] of cases) {
        const response = await send(app, owner, 'POST', PATH, { url, enabled_events: ['*'] });
        expect(response.statusCode, url).toBe(422);
        expect(response.json(), url).toMatchObject({ code: 'invalid_body', errors: [{ param: 'url', detail: expect.stringMatching(reason) }] });
      }
    });

    it('refuses bad enabled_events, a long description and unknown members, naming each', async () => {
      const refused = async (body: Record<string, unknown>) => {
        const response = await send(app, owner, 'POST', PATH, { url: 'https://hooks.example.com/', enabled_events: ['*'], ...body });
        expect(response.statusCode, JSON.stringify(body)).toBe(422);
        return (response.json() as { errors: { param: string; detail: string }[] }).errors;
      };
      expect(await refused({ enabled_events: [] })).toEqual([expect.objectContaining({ param: 'enabled_events' })]);
      expect(await refused({ enabled_events: 'loan.created' })).toEqual([expect.objectContaining({ param: 'enabled_events' })]);
      expect(await refused({ enabled_events: ['loan.created', 'loan.deleted', 'bogus.*', 7] })).toEqual([
        expect.objectContaining({ param: 'enabled_events[1]', detail: expect.stringContaining("'loan.deleted'") }),
        expect.objectContaining({ param: 'enabled_events[2]' }),
        expect.objectContaining({ param: 'enabled_events[3]' }),
      ]);
      expect(await refused({ description: 'd'.repeat(501) })).toEqual([expect.objectContaining({ param: 'description' })]);
      expect(await refused({ secret: 'whsec_mine', extra: 1 })).toEqual([expect.objectContaining({ param: 'secret' }), expect.objectContaining({ param: 'extra' })]);
      const missing = await send(app, owner, 'POST', PATH, {});
      expect(missing.json().errors.map((error: { param: string }) => error.param)).toEqual(['url', 'enabled_events']);
      // A description of exactly 500 characters, and the prefixes and `*`, are accepted.
      await create(app, owner, { description: 'd'.repeat(500), enabled_events: ['entity.*', 'ledger_entry.created'] });
    });

    it('answers 503 webhook_secret_key_missing without a key, and creates nothing', async () => {
      const keyless = await buildApp({ store: store(), webhooks: { secretBox: null } });
      try {
        const tenant = await createTenant(store(), 'Keyless', 'webhooks');
        const response = await send(keyless, tenant, 'POST', PATH, { url: 'https://hooks.example.com/', enabled_events: ['*'] });
        expect(response.statusCode).toBe(503);
        expect(response.json()).toMatchObject({ code: 'webhook_secret_key_missing', detail: expect.stringContaining('WEBHOOK_SECRET_KEY is not set') });
        expect((await send(keyless, tenant, 'GET', PATH)).json()).toMatchObject({ count: 0, items: [] });
      } finally {
        await keyless.close();
      }
    });

    it('holds an organization to 16 endpoints: the 17th is a 409, whoever else is creating at the same time', async () => {
      const tenant = await createTenant(store(), 'Crowded', 'webhooks');
      const attempts = await Promise.all(
        Array.from({ length: 20 }, (_, i) => send(app, tenant, 'POST', PATH, { url: `https://hooks.example.com/${i}`, enabled_events: ['*'] })),
      );
      const statuses = attempts.map((response) => response.statusCode).sort();
      expect(statuses).toEqual([...Array<number>(16).fill(201), ...Array<number>(4).fill(409)]);
      expect(attempts.find((response) => response.statusCode === 409)!.json()).toMatchObject({ code: 'webhook_endpoint_limit' });
      const [held] = await store().query<{ count: number }>('SELECT count(*)::int AS count FROM webhook_endpoints WHERE org_id = $1', [tenant.org.id]);
      expect(held!.count).toBe(16);
      // Another organization is not counted against it.
      await create(app, other);
    });
  });

  describe('GET /api/webhook_endpoints/', () => {
    it('pages the endpoints 10 at a time, oldest first, with links; a page past the last is a 404', async () => {
      const tenant = await createTenant(store(), 'Pager', 'webhooks');
      const ids: string[] = [];
      for (let i = 0; i < 12; i += 1) ids.push((await create(app, tenant)).id);
      const first = await send(app, tenant, 'GET', PATH);
      expect(first.json()).toMatchObject({ count: 12, previous: null, next: expect.stringMatching(/\/api\/webhook_endpoints\/\?page=2$/) });
      expect(first.headers.link).toContain('rel="next"');
      const second = await send(app, tenant, 'GET', `${PATH}?page=2`);
      expect([...first.json().items, ...second.json().items].map((endpoint: Endpoint) => endpoint.id)).toEqual(ids);
      expect(second.json().next).toBeNull();
      expect((await send(app, tenant, 'GET', `${PATH}?page=3`)).json()).toMatchObject({ code: 'page_out_of_range', last_page: 2 });
      const unknown = await send(app, tenant, 'GET', `${PATH}?order_by=url&page=0`);
      expect(unknown.statusCode).toBe(422);
      expect(unknown.json().errors.map((error: { param: string }) => error.param)).toEqual(['order_by', 'page']);
    });
  });

  describe('scopes', () => {
    it('refuses read and write keys on every route with 403 insufficient_scope, and lets a webhooks key read but not write', async () => {
      const endpoint = await create(app, owner);
      const routes: ['GET' | 'POST' | 'DELETE', string, unknown?][] = [
        ['POST', PATH, { url: 'https://hooks.example.com/', enabled_events: ['*'] }],
        ['GET', PATH],
        ['GET', `${PATH}${endpoint.id}/`],
        ['POST', `${PATH}${endpoint.id}/`, { disabled: true }],
        ['DELETE', `${PATH}${endpoint.id}/`],
        ['POST', `${PATH}${endpoint.id}/rotate_secret/`],
        ['GET', `${PATH}${endpoint.id}/deliveries/`],
      ];
      for (const scope of ['read', 'write'] as const) {
        const tenant = { ...owner, ...(await keyOf(owner, scope)) };
        for (const [method, url, body] of routes) {
          const response = await send(app, tenant, method, url, body);
          expect(response.statusCode, `${scope} ${method} ${url}`).toBe(403);
          expect(response.json()).toMatchObject({ code: 'insufficient_scope', detail: expect.stringContaining('--scope webhooks') });
        }
      }
      expect((await send(app, owner, 'GET', `${PATH}${endpoint.id}/`)).json()).toMatchObject({ disabled: false });
      expect((await send(app, owner, 'GET', '/api/methods/')).statusCode).toBe(200);
      const drawdown = await app.inject({ method: 'POST', url: '/api/limits/cl_none/drawdowns/', headers: { authorization: owner.authorization, 'content-type': 'application/json', 'idempotency-key': randomUUID() }, payload: '{"amount":"1.00"}' });
      expect(drawdown.statusCode).toBe(403);
    });

    async function keyOf(tenant: Tenant, scope: 'read' | 'write'): Promise<{ authorization: string }> {
      const { createApiKey } = await import('../../src/auth/api-keys.js');
      const key = await createApiKey(store(), tenant.org.uid, undefined, scope);
      return { authorization: `Basic ${Buffer.from(`${tenant.org.uid}:${key.key}`).toString('base64')}` };
    }
  });

  describe('POST /api/webhook_endpoints/{id}/', () => {
    it('updates the members given; disabling cancels pending deliveries and says requested; enabling clears the reason and failure clock', async () => {
      const endpoint = await create(app, owner, { description: 'before' });
      const kept = await pendingDelivery(store(), owner.org.id, endpoint.id);
      const changed = await send(app, owner, 'POST', `${PATH}${endpoint.id}/`, { url: 'https://other.example.com/h', description: null });
      expect(changed.statusCode, changed.body).toBe(200);
      expect(changed.json()).toMatchObject({ id: endpoint.id, url: 'https://other.example.com/h', description: null, enabled_events: ['*'], disabled: false });
      expect(changed.json().secret).toBeUndefined();
      expect(await deliveryState(store(), owner.org.id, kept)).toBe('pending');

      const disabled = await send(app, owner, 'POST', `${PATH}${endpoint.id}/`, { disabled: true });
      expect(disabled.json()).toMatchObject({ disabled: true, disabled_reason: 'requested' });
      expect(await deliveryState(store(), owner.org.id, kept)).toBe('cancelled');

      await store().query(`UPDATE webhook_endpoints SET disabled_reason = 'failing', failing_since = now() - interval '3 days' WHERE org_id = $1 AND uid = $2`, [owner.org.id, endpoint.id]);
      const enabled = await send(app, owner, 'POST', `${PATH}${endpoint.id}/`, { disabled: false });
      expect(enabled.json()).toMatchObject({ disabled: false, disabled_reason: null });
      const [row] = await store().query<{ failing_since: unknown }>('SELECT failing_since FROM webhook_endpoints WHERE org_id = $1 AND uid = $2', [owner.org.id, endpoint.id]);
      expect(row!.failing_since).toBeNull();
    });

    it('cancels the pending deliveries whose type enabled_events no longer takes, and only those', async () => {
      const endpoint = await create(app, owner, { enabled_events: ['loan.*', 'entity.created'] });
      const loan = await pendingDelivery(store(), owner.org.id, endpoint.id, 'loan.repaid');
      const entity = await pendingDelivery(store(), owner.org.id, endpoint.id, 'entity.created');
      const response = await send(app, owner, 'POST', `${PATH}${endpoint.id}/`, { enabled_events: ['loan.repaid'] });
      expect(response.json()).toMatchObject({ enabled_events: ['loan.repaid'] });
      expect(await deliveryState(store(), owner.org.id, loan)).toBe('pending');
      expect(await deliveryState(store(), owner.org.id, entity)).toBe('cancelled');
    });

    it('refuses an empty update, a non-boolean disabled and a refused URL, changing nothing', async () => {
      const endpoint = await create(app, owner);
      for (const [body, param] of [[{}, 'body'], [{ disabled: 'yes' }, 'disabled'], [{ url: 'https://10.0.0.1/' }, 'url'], [{ id: 'we_x' }, 'id']] as const) {
        const response = await send(app, owner, 'POST', `${PATH}${endpoint.id}/`, body);
        expect(response.statusCode, JSON.stringify(body)).toBe(422);
        expect(response.json().errors).toContainEqual(expect.objectContaining({ param }));
      }
      const { secret: _secret, ...unchanged } = endpoint;
      expect((await send(app, owner, 'GET', `${PATH}${endpoint.id}/`)).json()).toEqual(unchanged);
    });
  });

  describe('DELETE /api/webhook_endpoints/{id}/', () => {
    it('answers 204, cancels its pending deliveries, and then the endpoint is a 404', async () => {
      const endpoint = await create(app, owner);
      const pending = await pendingDelivery(store(), owner.org.id, endpoint.id);
      const [done] = await store().query<{ id: string }>(`UPDATE webhook_deliveries SET state = 'delivered' WHERE org_id = $1 AND id = $2 RETURNING id::text AS id`, [owner.org.id, await pendingDelivery(store(), owner.org.id, endpoint.id)]);
      const response = await send(app, owner, 'DELETE', `${PATH}${endpoint.id}/`);
      expect(response.statusCode).toBe(204);
      expect(response.body).toBe('');
      expect(await deliveryState(store(), owner.org.id, pending)).toBe('cancelled');
      expect(await deliveryState(store(), owner.org.id, done!.id)).toBe('delivered');
      expect((await send(app, owner, 'GET', `${PATH}${endpoint.id}/`)).statusCode).toBe(404);
      expect((await send(app, owner, 'DELETE', `${PATH}${endpoint.id}/`)).statusCode).toBe(404);
    });
  });

  describe('POST /api/webhook_endpoints/{id}/rotate_secret/', () => {
    it('answers a new secret once; the old one keeps signing beside it for 24 hours', async () => {
      const endpoint = await create(app, owner);
      const response = await send(app, owner, 'POST', `${PATH}${endpoint.id}/rotate_secret/`);
      expect(response.statusCode, response.body).toBe(200);
      const rotated = response.json<Endpoint>();
      expect(rotated.secret).toMatch(SECRET);
      expect(rotated.secret).not.toBe(endpoint.secret);
      expect((await send(app, owner, 'GET', `${PATH}${endpoint.id}/`)).body).not.toContain(rotated.secret!.slice(6));

      type Row = SealedEndpointSecrets & { previous_secret_expires_at: Date; within_a_day: boolean };
      const stored = async () =>
        (
          await store().query<Row>(
            `SELECT secret_ciphertext, previous_secret_ciphertext, previous_secret_expires_at, earlier_secrets,
                    previous_secret_expires_at BETWEEN now() + interval '23 hours' AND now() + interval '24 hours' AS within_a_day
               FROM webhook_endpoints WHERE org_id = $1 AND uid = $2`,
            [owner.org.id, endpoint.id],
          )
        )[0]!;
      const row = await stored();
      expect(row.within_a_day).toBe(true);
      const expiry = new Date(row.previous_secret_expires_at);
      expect(signingSecretsOf(box, row, new Date(expiry.getTime() - 1000))).toEqual([rotated.secret, endpoint.secret]);
      expect(signingSecretsOf(box, row, new Date(expiry.getTime() + 1000))).toEqual([rotated.secret]);

      // Rotated again 12 hours later (its answer was lost, say): the first secret still signs until its own
      // 24 hours end, the second until 24 hours after this rotation. (In UTC: Citus refuses timestamptz - interval here.)
      await store().query(
        `UPDATE webhook_endpoints SET previous_secret_expires_at = ((previous_secret_expires_at AT TIME ZONE 'UTC') - interval '12 hours') AT TIME ZONE 'UTC'
          WHERE org_id = $1 AND uid = $2`,
        [owner.org.id, endpoint.id],
      );
      const firstExpiry = expiry.getTime() - 12 * 3_600_000;
      const again = (await send(app, owner, 'POST', `${PATH}${endpoint.id}/rotate_secret/`, {})).json<Endpoint>();
      const after = await stored();
      expect(signingSecretsOf(box, after, new Date())).toEqual([again.secret, rotated.secret, endpoint.secret]);
      expect(signingSecretsOf(box, after, new Date(firstExpiry + 1000))).toEqual([again.secret, rotated.secret]);
      expect(signingSecretsOf(box, after, new Date(new Date(after.previous_secret_expires_at).getTime() + 1000))).toEqual([again.secret]);
      // However many rotations, at most 8 secrets sign: the newest.
      const secrets = [endpoint.secret, rotated.secret, again.secret];
      for (let i = 0; i < 8; i += 1) secrets.push((await send(app, owner, 'POST', `${PATH}${endpoint.id}/rotate_secret/`, {})).json<Endpoint>().secret);
      expect(signingSecretsOf(box, await stored(), new Date())).toEqual(secrets.slice(-(MAX_EARLIER_SECRETS + 2)).reverse());
      // Sealed: no secret's text in the column.
      const [{ sealed } = { sealed: '' }] = await store().query<{ sealed: string }>("SELECT encode(earlier_secrets, 'hex') AS sealed FROM webhook_endpoints WHERE org_id = $1 AND uid = $2", [owner.org.id, endpoint.id]);
      expect(sealed.length).toBeGreaterThan(0);
      for (const secret of secrets) expect(sealed).not.toContain(Buffer.from(secret!.slice(6)).toString('hex'));
      expect((await send(app, owner, 'POST', `${PATH}${endpoint.id}/rotate_secret/`, { expires: 1 })).statusCode).toBe(422);
      expect(log.text()).not.toContain(again.secret!.slice(6));
    });
  });

  it('recovers from a lost WEBHOOK_SECRET_KEY as the docs say: under a new key a rotation signs with the new secret at once', async () => {
    const endpoint = await create(app, owner);
    await send(app, owner, 'POST', `${PATH}${endpoint.id}/rotate_secret/`, {});
    const newKey = SecretBox.fromKey(randomBytes(32));
    const recovered = await buildApp({ store: store(), webhooks: { secretBox: newKey } });
    try {
      const rotate = () => recovered.inject({ method: 'POST', url: `${PATH}${endpoint.id}/rotate_secret/`, headers: { authorization: owner.authorization, 'content-type': 'application/json' }, payload: '{}' });
      const first = await rotate();
      expect(first.statusCode, first.body).toBe(200);
      const second = await rotate();
      expect(second.statusCode, second.body).toBe(200);
      const [row] = await store().query<SealedEndpointSecrets>(
        'SELECT secret_ciphertext, previous_secret_ciphertext, previous_secret_expires_at, earlier_secrets FROM webhook_endpoints WHERE org_id = $1 AND uid = $2',
        [owner.org.id, endpoint.id],
      );
      // The secrets sealed under the lost key are left out; the two made under the new one sign.
      expect(signingSecretsOf(newKey, row!, new Date())).toEqual([second.json<Endpoint>().secret, first.json<Endpoint>().secret]);
    } finally {
      await recovered.close();
    }
  });

  describe('GET /api/webhook_endpoints/{id}/deliveries/', () => {
    it("lists the endpoint's attempts newest first, 10 a page", async () => {
      const endpoint = await create(app, owner);
      const delivery = await pendingDelivery(store(), owner.org.id, endpoint.id);
      await store().query(
        `INSERT INTO webhook_attempts (org_id, endpoint_id, delivery_id, event_uid, attempt, status_code, duration_ms, error, response_body, next_attempt_at, created_at)
         SELECT $1, w.id, $3, $4, n, CASE WHEN n = 12 THEN 200 END, 10 * n, CASE WHEN n < 12 THEN 'connection refused (ECONNREFUSED)' END,
                CASE WHEN n = 12 THEN 'ok' END, CASE WHEN n < 12 THEN now() + n * interval '1 minute' END, now() - (12 - n) * interval '1 minute'
           FROM webhook_endpoints w, generate_series(1, 12) n WHERE w.org_id = $1 AND w.uid = $2`,
        [owner.org.id, endpoint.id, delivery, EVENT_UID],
      );
      const first = await send(app, owner, 'GET', `${PATH}${endpoint.id}/deliveries/`);
      expect(first.statusCode, first.body).toBe(200);
      const page = first.json<{ count: number; next: string; items: Record<string, unknown>[] }>();
      expect(page.count).toBe(12);
      expect(page.items).toHaveLength(10);
      expect(page.items[0]).toEqual({
        id: expect.stringMatching(/^wha_[0-9a-f]{32}$/),
        object: 'webhook_delivery_attempt',
        event: EVENT_UID,
        // EVENT_UID is in no log: no type to tell.
        event_type: null,
        attempt: 12,
        status_code: 200,
        duration_ms: 120,
        error: null,
        response_body: 'ok',
        next_attempt_at: null,
        created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/),
      });
      expect(page.items[1]).toMatchObject({ attempt: 11, status_code: null, error: 'connection refused (ECONNREFUSED)', next_attempt_at: expect.stringMatching(/Z$/) });
      const second = await send(app, owner, 'GET', page.next.replace(/^https?:\/\/[^/]+/, ''));
      expect(second.json().items.map((attempt: { attempt: number }) => attempt.attempt)).toEqual([2, 1]);
      const empty = await create(app, owner);
      expect((await send(app, owner, 'GET', `${PATH}${empty.id}/deliveries/`)).json()).toEqual({ count: 0, next: null, previous: null, items: [] });
    });
  });

  describe('enabled_events', () => {
    // events_track passes a missing own status as the text 'null' (format('%L', NULL)): no status event.
    it('knows every object and own status the event triggers of the schema emit', async () => {
      const rows = await store().query<{ args: string }>(
        `SELECT DISTINCT encode(t.tgargs, 'escape') AS args FROM pg_trigger t JOIN pg_proc p ON p.oid = t.tgfoid
           JOIN pg_class c ON c.oid = t.tgrelid AND c.relnamespace = current_schema()::regnamespace
          WHERE p.proname = 'events_record_updated'`,
      );
      const triggered = rows.map((row) => row.args.split('\\000')).flatMap(([object, , , status]) => [`${object}.*`, ...(status && status !== 'null' ? [`${object}.${status}`] : [])]);
      expect(triggered.length).toBeGreaterThan(0);
      const { EVENT_TYPES, EVENT_TYPE_PREFIXES } = await import('../../src/events/event-types.js');
      expect(new Set(triggered.filter((pattern) => pattern.endsWith('.*')))).toEqual(new Set(EVENT_TYPE_PREFIXES));
      for (const type of triggered.filter((pattern) => !pattern.endsWith('.*'))) expect(EVENT_TYPES).toContain(type);
    });
  });

  describe("another organization's endpoint", () => {
    it('is a 404 on every route, and is left as it was', async () => {
      const theirs = await create(app, other);
      const attempts: ['GET' | 'POST' | 'DELETE', string, unknown?][] = [
        ['GET', `${PATH}${theirs.id}/`],
        ['POST', `${PATH}${theirs.id}/`, { disabled: true }],
        ['DELETE', `${PATH}${theirs.id}/`],
        ['POST', `${PATH}${theirs.id}/rotate_secret/`],
        ['GET', `${PATH}${theirs.id}/deliveries/`],
      ];
      for (const [method, url, body] of attempts) {
        const response = await send(app, owner, method, url, body);
        expect(response.statusCode, `${method} ${url}`).toBe(404);
        expect(response.json()).toMatchObject({ code: 'not_found' });
      }
      const { secret: _secret, ...unchanged } = theirs;
      expect((await send(app, other, 'GET', `${PATH}${theirs.id}/`)).json()).toEqual(unchanged);
      expect((await send(app, owner, 'GET', PATH)).json().items.map((endpoint: Endpoint) => endpoint.id)).not.toContain(theirs.id);
    });
  });
});

describeEachStore('webhook endpoint URLs where the operator allows more', (store) => {
  let app: FastifyInstance;
  let tenant: Tenant;
  beforeAll(async () => {
    app = await buildApp({ store: store(), webhooks: { secretBox: SecretBox.fromKey(randomBytes(32)), destinations: { allowPrivate: true, allowHosts: ['hooks.internal'] } } });
    tenant = await createTenant(store(), 'Internal', 'webhooks');
  });
  afterAll(async () => {
    await app.close();
  });

  it('takes http:// and private addresses with WEBHOOK_ALLOW_PRIVATE, but never the metadata service', async () => {
    for (const url of ['http://127.0.0.1:8080/hook', 'http://10.1.2.3/hook', 'http://hooks.internal/hook']) {
      expect((await send(app, tenant, 'POST', PATH, { url, enabled_events: ['*'] })).statusCode, url).toBe(201);
    }
    const metadata = await send(app, tenant, 'POST', PATH, { url: 'http://169.254.169.254/', enabled_events: ['*'] });
    expect(metadata.statusCode).toBe(422);
    expect(metadata.json().errors).toEqual([expect.objectContaining({ param: 'url', detail: expect.stringContaining('metadata') })]);
  });
});
