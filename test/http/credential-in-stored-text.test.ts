import { randomBytes, randomUUID } from 'node:crypto';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SecretBox } from '../../src/webhooks/secret-box.js';
import { buildApp, json } from '../helpers/app.js';
import { creditLimit, insertCreditLimits, insertPaymentMethods, paymentMethod } from '../helpers/records.js';
import { describeEachStore } from '../helpers/stores.js';
import { createTenant, type Tenant } from '../helpers/tenants.js';

interface Problem {
  code: string;
  detail: string;
  errors?: { param: string; detail: string }[];
}

const b64 = (text: string) => Buffer.from(text).toString('base64');
const b64url = (text: string) => Buffer.from(text).toString('base64url');
const spaced = (text: string) => text.replace(/(.{7})/g, '$1 ');

/**
 * Every form of the tenant's own key a client could paste by mistake (SPEC §3a), each as
 * written and in other letter case or spacing: none may be stored.
 */
function credentialForms(tenant: Tenant): Record<string, string> {
  const key = tenant.apiKey;
  const secret = key.slice('lak_0123456789abcdef_'.length);
  const orgKey = `${tenant.org.uid}:${key}`;
  const forms: Record<string, string> = {
    'the key': key,
    'its secret part': secret,
    'base64 of the key': b64(key),
    'base64url of the key': b64url(key),
    'base64 of org:key': b64(orgKey),
    'base64url of org:key': b64url(orgKey),
    'the Authorization value': tenant.authorization,
  };
  return {
    ...forms,
    'the secret part in upper case': secret.toUpperCase(),
    'the secret part in lower case': secret.toLowerCase(),
    'base64 of org:key in lower case': b64(orgKey).toLowerCase(),
    'the Authorization value in upper case': tenant.authorization.toUpperCase(),
    'the Authorization value with spaces': `Basic   ${spaced(b64(orgKey))}`,
    'base64url of the key with spaces': spaced(b64url(key)),
    'the secret part with spaces': spaced(secret),
    'the secret part inside a longer value': `order-17/${secret}/retry`,
  };
}

function expectRefusedNaming(response: LightMyRequestResponse, param: string, what: string): void {
  if (param === 'Idempotency-Key') {
    expect(response.statusCode, `${what}: ${response.body}`).toBe(400);
    expect(json<Problem>(response).code).toBe('idempotency_key_invalid');
    expect(json<Problem>(response).detail).toContain('it was not stored');
  } else {
    expect(response.statusCode, `${what}: ${response.body}`).toBe(422);
    expect(json<Problem>(response).errors, what).toContainEqual({ param, detail: expect.stringContaining('must not hold a credential') });
  }
}

describeEachStore('a credential in a text the service stores (SPEC §3a)', (store) => {
  let app: FastifyInstance;
  let writer: Tenant;
  let hooks: Tenant;
  let limit: string;
  let method: string;
  let loan: string;

  beforeAll(async () => {
    app = await buildApp({ store: store(), rateLimit: { perMinute: 0, authFailuresPerMinute: 0 }, webhooks: { secretBox: SecretBox.fromKey(randomBytes(32)) } });
    writer = await createTenant(store(), 'Writer', 'write');
    hooks = await createTenant(store(), 'Hooks', 'webhooks');
    const limitRow = creditLimit({ capacity: '1000.00' });
    const methodRow = paymentMethod({ entity: limitRow.entity, currency: limitRow.currency });
    await insertCreditLimits(store(), writer.org.id, [limitRow]);
    await insertPaymentMethods(store(), writer.org.id, [methodRow]);
    limit = limitRow.uid;
    method = methodRow.uid;
    const created = await writeRequest('/api/loans/', { credit_limit: limit, payment_method: method, principal: '10.00', reference: 'loan for INV-2024-0001' });
    expect(created.statusCode, created.body).toBe(201);
    loan = json<{ loan: { uid: string } }>(created).loan.uid;
  });
  afterAll(async () => {
    await app?.close();
  });

  function writeRequest(url: string, body: unknown, idempotencyKey: string = randomUUID()): Promise<LightMyRequestResponse> {
    return app.inject({
      method: 'POST',
      url,
      headers: { authorization: writer.authorization, 'content-type': 'application/json', 'idempotency-key': idempotencyKey },
      payload: JSON.stringify(body),
    });
  }

  function endpointRequest(url: string, body: unknown): Promise<LightMyRequestResponse> {
    return app.inject({ method: 'POST', url, headers: { authorization: hooks.authorization, 'content-type': 'application/json' }, payload: JSON.stringify(body) });
  }

  const writes = () => [
    { name: 'a drawdown', url: `/api/limits/${limit}/drawdowns/`, body: { amount: '1.00' } },
    { name: 'a repayment', url: `/api/limits/${limit}/repayments/`, body: { amount: '1.00' } },
    { name: 'a loan', url: '/api/loans/', body: { credit_limit: limit, payment_method: method, principal: '1.00' } },
    { name: "a loan's repayment", url: `/api/loans/${loan}/repayments/`, body: { amount: '1.00' } },
  ];

  /** Every text the organizations' records, idempotency keys and events hold. */
  async function storedTexts(): Promise<string[]> {
    const orgs = [writer.org.id, hooks.org.id];
    const rows = await store().query<{ text: string | null }>(
      `SELECT idempotency_key AS text FROM idempotency_keys WHERE org_id = ANY($1::bigint[])
       UNION ALL SELECT reference FROM ledger_entries WHERE org_id = ANY($1::bigint[])
       UNION ALL SELECT reference FROM loans WHERE org_id = ANY($1::bigint[])
       UNION ALL SELECT concat_ws(' ', idempotency_key, request_id, data_object::text) FROM events WHERE org_id = ANY($1::bigint[])
       UNION ALL SELECT concat_ws(' ', idempotency_key, request_id, data_object::text) FROM event_outbox WHERE org_id = ANY($1::bigint[])
       UNION ALL SELECT url FROM webhook_endpoints WHERE org_id = ANY($1::bigint[])
       UNION ALL SELECT description FROM webhook_endpoints WHERE org_id = ANY($1::bigint[])`,
      [orgs],
    );
    return rows.map((row) => row.text).filter((text): text is string => text !== null);
  }

  async function expectNoneStored(values: readonly string[]): Promise<void> {
    const stored = (await storedTexts()).join('\n').toLowerCase().replace(/\s+/g, '');
    for (const value of values) expect(stored, value).not.toContain(value.toLowerCase().replace(/\s+/g, ''));
  }

  describe('an Idempotency-Key', () => {
    it('is refused (400) in every form of the request’s own key, on every write, and never stored', async () => {
      const forms = credentialForms(writer);
      for (const write of writes()) {
        for (const [form, value] of Object.entries(forms)) {
          expectRefusedNaming(await writeRequest(write.url, write.body, value), 'Idempotency-Key', `${write.name}, ${form}`);
        }
      }
      await expectNoneStored(Object.values(forms));
    });

    it('is still accepted when unrelated to any credential', async () => {
      const response = await writeRequest(`/api/limits/${limit}/drawdowns/`, { amount: '1.00' }, 'checkout-2024-05-01-0001');
      expect(response.statusCode, response.body).toBe(201);
      // Its events quote it (in the outbox until published).
      const [quoted] = await store().query<{ count: string }>(
        `SELECT count(*)::text AS count FROM (SELECT idempotency_key FROM events WHERE org_id = $1 UNION ALL SELECT idempotency_key FROM event_outbox WHERE org_id = $1) quoted
          WHERE idempotency_key = $2`,
        [writer.org.id, 'checkout-2024-05-01-0001'],
      );
      expect(Number(quoted!.count)).toBeGreaterThan(0);
    });
  });

  describe('a reference', () => {
    it('is refused (422 naming reference) in every form, on drawdowns, repayments, loans and their repayments, and never stored', async () => {
      const forms = credentialForms(writer);
      for (const write of writes()) {
        for (const [form, value] of Object.entries(forms)) {
          expectRefusedNaming(await writeRequest(write.url, { ...write.body, reference: value }), 'reference', `${write.name}, ${form}`);
        }
      }
      await expectNoneStored(Object.values(forms));
    });

    it('is still accepted when unrelated to any credential', async () => {
      for (const write of writes()) {
        const response = await writeRequest(write.url, { ...write.body, reference: 'INV-2024-0001 Acme Corp' });
        expect(response.statusCode, `${write.name}: ${response.body}`).toBe(201);
      }
      expect(await storedTexts()).toContain('INV-2024-0001 Acme Corp');
    });
  });

  describe('an X-Request-Id', () => {
    it('is replaced by the service’s own id, not echoed nor quoted in events, when it holds the request’s key', async () => {
      const key = writer.apiKey;
      const secret = key.slice('lak_0123456789abcdef_'.length);
      for (const requestId of [secret, secret.toUpperCase(), b64url(key), b64url(`${writer.org.uid}:${key}`)]) {
        const response = await app.inject({
          method: 'POST',
          url: `/api/limits/${limit}/drawdowns/`,
          headers: { authorization: writer.authorization, 'content-type': 'application/json', 'idempotency-key': randomUUID(), 'x-request-id': requestId },
          payload: JSON.stringify({ amount: '1.00' }),
        });
        expect(response.statusCode, response.body).toBe(201);
        expect(response.headers['x-request-id']).not.toBe(requestId);
        await expectNoneStored([requestId]);
      }
      const plain = await app.inject({ url: '/api/methods/', headers: { authorization: writer.authorization, 'x-request-id': 'req-2024-05-01.0001' } });
      expect(plain.headers['x-request-id']).toBe('req-2024-05-01.0001');
    });
  });

  describe('a webhook endpoint', () => {
    const PATH = '/api/webhook_endpoints/';
    const urlsHolding = (value: string) => [`https://hooks.example.com/${value}`, `https://hooks.example.com/in?token=${value}`];

    it('refuses (422) a url or a description holding any form of the request’s own key, on creation and on update, and stores neither', async () => {
      const forms = credentialForms(hooks);
      const existing = await endpointRequest(PATH, { url: 'https://hooks.example.com/lending', enabled_events: ['*'], description: 'Loan book' });
      expect(existing.statusCode, existing.body).toBe(201);
      const id = json<{ id: string }>(existing).id;
      for (const [form, value] of Object.entries(forms)) {
        for (const url of urlsHolding(value)) {
          expectRefusedNaming(await endpointRequest(PATH, { url, enabled_events: ['*'] }), 'url', `create, url, ${form}`);
          expectRefusedNaming(await endpointRequest(`${PATH}${id}/`, { url }), 'url', `update, url, ${form}`);
        }
        expectRefusedNaming(await endpointRequest(PATH, { url: 'https://hooks.example.com/x', enabled_events: ['*'], description: value }), 'description', `create, ${form}`);
        expectRefusedNaming(await endpointRequest(`${PATH}${id}/`, { description: `key: ${value}` }), 'description', `update, ${form}`);
      }
      const [count] = await store().query<{ count: string }>('SELECT count(*)::text AS count FROM webhook_endpoints WHERE org_id = $1', [hooks.org.id]);
      expect(count!.count).toBe('1');
      await expectNoneStored(Object.values(forms));
    });

    it('refuses another key pasted in the url, plainly or base64-encoded', async () => {
      const other = `lak_${'0123456789abcdef'}_${randomBytes(32).toString('base64url')}`;
      for (const url of [`http://hooks.example.com/${other}`, `https://hooks.example.com/${other}`, `https://hooks.example.com/?k=${b64(`org_x:${other}`)}`]) {
        expectRefusedNaming(await endpointRequest(PATH, { url, enabled_events: ['*'] }), 'url', url);
      }
    });

    it('still accepts a url and a description unrelated to any credential', async () => {
      const url = `https://hooks.example.com/in/${randomUUID()}?tenant=acme`;
      const response = await endpointRequest(PATH, { url, enabled_events: ['*'], description: 'Acme loan book (INV-2024-0001)' });
      expect(response.statusCode, response.body).toBe(201);
      expect(json<{ url: string; description: string }>(response)).toMatchObject({ url, description: 'Acme loan book (INV-2024-0001)' });
    });
  });
});
