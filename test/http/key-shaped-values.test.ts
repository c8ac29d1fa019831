import type { LightMyRequestResponse } from 'fastify';
import { expect, it } from 'vitest';
import { createLogger } from '../../src/logger.js';
import { json, useApp, type Page } from '../helpers/app.js';
import { logBuffer } from '../helpers/log-buffer.js';
import { insertPaymentMethods, paymentMethod } from '../helpers/records.js';
import { describeEachStore } from '../helpers/stores.js';
import { ledgerState, postEntry, useWriter } from '../helpers/writes.js';

interface Problem {
  code: string;
  detail: string;
  errors?: { param: string; detail: string }[];
}

/** The secret half of a key: what must never be readable, in any letter case, raw or percent-decoded. */
const secretOf = (key: string) => key.slice('lak_0123456789abcdef_'.length);

function decoded(text: string): string {
  let current = text;
  for (let round = 0; round < 4; round += 1) current = current.replace(/%([0-9A-Fa-f]{2})/g, (_m, hex: string) => String.fromCharCode(parseInt(hex, 16)));
  return current;
}

/** Everything a client receives: status line aside, every header and the body. */
function everythingIn(response: LightMyRequestResponse): string {
  return `${JSON.stringify(response.headers)}\n${response.body}`;
}

function expectNoSecret(text: string, key: string, what: string): void {
  for (const form of [text, decoded(text)]) {
    expect(form.toLowerCase(), what).not.toContain(secretOf(key).toLowerCase());
  }
}

describeEachStore('API keys pasted where they do not belong', (store) => {
  const log = logBuffer();
  const app = useApp(store, { loggerInstance: createLogger('info', log.stream) });
  const { writer, newLimit } = useWriter(store);

  it('refuses a key-shaped Idempotency-Key with a 400 naming the header, and stores nothing', async () => {
    const limit = await newLimit();
    const key = writer().apiKey;
    const shapes = [key, key.toUpperCase(), key.slice('lak_'.length), `retry-${key}`, key.replace(/_/g, '%5F'), 'lak_not-even-a-whole-key'];
    for (const idempotencyKey of shapes) {
      const response = await postEntry(app(), 'drawdown', limit, { amount: '1.00' }, { authorization: writer().authorization, idempotencyKey });
      expect(response.statusCode, idempotencyKey).toBe(400);
      const problem = json<Problem>(response);
      expect(problem.code).toBe('idempotency_key_invalid');
      expect(problem.detail).toContain('Idempotency-Key looks like an API key');
      expectNoSecret(everythingIn(response), key, idempotencyKey);
    }
    const [stored] = await store().query<{ count: string }>('SELECT count(*)::text AS count FROM idempotency_keys WHERE org_id = $1', [writer().org.id]);
    expect(stored!.count).toBe('0');
    expect(await ledgerState(store(), writer().org.id, limit)).toEqual({ outstanding: '0.00', entries: 0 });
    // A plain key still writes.
    const plain = await postEntry(app(), 'drawdown', limit, { amount: '1.00' }, { authorization: writer().authorization, idempotencyKey: 'checkout-42' });
    expect(plain.statusCode).toBe(201);
    expectNoSecret(log.text(), key, 'the log');
  });

  it('never echoes a key from the path, the query or the body: 404 and 422 details, errors[].param, Link, next', async () => {
    const key = writer().apiKey;
    const limit = await newLimit();
    const get = (url: string) => app().inject({ url, headers: { authorization: writer().authorization } });
    const underscoreEncoded = key.replace(/_/g, '%5F');
    const notFound = [`/api/methods/${key}/`, `/api/methods/${underscoreEncoded}/`, `/api/${underscoreEncoded}/`, `/api/limits/${key}/entries/`];
    for (const url of notFound) {
      const response = await get(url);
      expect(response.statusCode, url).toBe(404);
      expect(json<Problem>(response).detail, url).toContain('[redacted]');
      expectNoSecret(everythingIn(response), key, url);
    }

    const invalid = [`/api/methods/?${key}=1`, `/api/methods/?entity=x&${underscoreEncoded}=2`, `/api/methods/?created_from=${key}`, `/api/methods/?order_by=${key}`];
    for (const url of invalid) {
      const response = await get(url);
      expect(response.statusCode, url).toBe(422);
      const problem = json<Problem>(response);
      expect(problem.errors!.length, url).toBeGreaterThan(0);
      expectNoSecret(everythingIn(response), key, url);
    }
    const unknown = json<Problem>(await get(`/api/methods/?${key}=1`));
    expect(unknown.errors).toEqual([{ param: '[redacted]', detail: expect.not.stringContaining(secretOf(key)) }]);

    // A filter value matching records: the links keep the other parameters, with the key redacted.
    const keyShapedEntity = `ent_${key}`;
    await insertPaymentMethods(store(), writer().org.id, Array.from({ length: 11 }, () => paymentMethod({ entity: keyShapedEntity })));
    for (const url of [`/api/methods/?entity=${encodeURIComponent(keyShapedEntity)}`, `/api/methods/?entity=${encodeURIComponent(keyShapedEntity)}&cursor=`]) {
      const response = await get(url);
      expect(response.statusCode, url).toBe(200);
      const page = json<Page>(response);
      expect(page.count).toBe(11);
      expect(page.next, url).toContain('entity=ent_%5Bredacted%5D');
      expect(response.headers.link, url).toContain('rel="next"');
      // The records are the organization's own data, shown as stored; the links are built from the request.
      expectNoSecret(JSON.stringify([response.headers, page.next, page.previous]), key, url);
    }

    const bodies: unknown[] = [
      { amount: key },
      { amount: '1.00', [key]: 1 },
      { amount: '1.00', at: key },
      { amount: '1.00', reference: 7, note: key },
      { amount: '1.00', reference: key },
      { amount: '1.00', reference: `order 17, ${key.toUpperCase()}` },
    ];
    for (const body of bodies) {
      const response = await postEntry(app(), 'drawdown', limit, body, { authorization: writer().authorization });
      expect(response.statusCode, JSON.stringify(body)).toBe(422);
      expectNoSecret(everythingIn(response), key, JSON.stringify(body));
    }
    // A reference would be stored and shown with the entry: refused, so nothing was written.
    expect(await ledgerState(store(), writer().org.id, limit)).toEqual({ outstanding: '0.00', entries: 0 });
    const loan = await app().inject({
      method: 'POST',
      url: '/api/loans/',
      headers: { authorization: writer().authorization, 'content-type': 'application/json', 'idempotency-key': 'loan-with-key' },
      payload: JSON.stringify({ credit_limit: limit, payment_method: 'pm_none', principal: '1.00', reference: key }),
    });
    expect(loan.statusCode).toBe(422);
    expect(json<Problem>(loan).errors).toContainEqual({ param: 'reference', detail: expect.stringContaining('looks like an API key') });
    expectNoSecret(everythingIn(loan), key, 'a loan');
    expectNoSecret(log.text(), key, 'the log');
  });
});
