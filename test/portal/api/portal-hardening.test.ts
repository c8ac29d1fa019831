import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createLogger } from '../../../src/logger.js';
import { publishAllEvents } from '../../../src/events/publish-events.js';
import { buildApp } from '../../helpers/app.js';
import { logBuffer } from '../../helpers/log-buffer.js';
import { creditLimit, insertCreditLimits } from '../../helpers/records.js';
import { SseReader, STREAM_TEST_HTTP } from '../../helpers/sse.js';
import { describeEachStore } from '../../helpers/stores.js';
import { createTenant } from '../../helpers/tenants.js';
import { postEntry } from '../../helpers/writes.js';
import { createLink, exchange, openSession } from './portal-helpers.js';

const STREAM = { heartbeatMs: 200, credentialCheckMs: 100, pollIntervalMs: 20, stallTimeoutMs: 1000, bufferBytes: 16 * 1024 };

describeEachStore('portal sessions: logs, streams, stored text and brute force', (store) => {
  const log = logBuffer();
  let app: FastifyInstance;
  let base: string;
  beforeAll(async () => {
    app = await buildApp({
      store: store(),
      loggerInstance: createLogger('info', log.stream),
      eventStream: STREAM,
      http: STREAM_TEST_HTTP,
      rateLimit: { perMinute: 100_000, authFailuresPerMinute: 1000 },
    });
    base = await app.listen({ host: '127.0.0.1', port: 0 });
  });
  afterAll(async () => {
    await app.close();
  });

  it('writes neither the link’s token nor the session’s secret in any log line, wherever a client puts them', async () => {
    const tenant = await createTenant(store(), 'Logged lender', 'write');
    const { token } = await createLink(app, tenant.authorization);
    const granted = await exchange(app, token);
    const session = granted.json<{ session: string }>().session;
    await exchange(app, token);
    await app.inject({ url: '/api/limits/', headers: { authorization: `Bearer ${session}` } });
    // Pasted where they do not belong: a path, a query, a request id.
    await app.inject({ url: `/api/methods/${token}/`, headers: { authorization: `Bearer ${session}` } });
    await app.inject({ url: `/api/limits/?entity=${session}`, headers: { authorization: tenant.authorization, 'x-request-id': session } });
    await app.inject({ url: `/portal/${token}`, headers: { authorization: `Bearer ${session}` } });
    const text = log.text();
    expect(log.lines().filter((line) => line.msg === 'request').length).toBeGreaterThanOrEqual(6);
    for (const secret of [token, session]) {
      expect(text).not.toContain(secret.slice(4));
      expect(text).not.toContain(encodeURIComponent(secret).slice(4));
    }
  });

  it('counts a session’s requests on its key’s budget', async () => {
    const tenant = await createTenant(store(), 'Budgeted lender');
    const { bearer } = await openSession(app, tenant.authorization);
    const remaining = async (authorization: string) => Number((await app.inject({ url: '/api/limits/', headers: { authorization } })).headers['x-ratelimit-remaining']);
    const first = await remaining(tenant.authorization);
    expect(await remaining(bearer)).toBe(first - 1);
    expect(await remaining(tenant.authorization)).toBe(first - 2);
  });

  it('streams events to a session of the organization', async () => {
    const tenant = await createTenant(store(), 'Streamed lender');
    const { bearer } = await openSession(app, tenant.authorization);
    const stream = await SseReader.open(`${base}/api/events/stream/`, { authorization: bearer });
    try {
      expect(stream.response.status).toBe(200);
      await insertCreditLimits(store(), tenant.org.id, [creditLimit({ uid: 'cl_portal_stream' })]);
      await publishAllEvents(store(), tenant.org.id);
      const [event] = await stream.take(1);
      expect(event!.event).toBe('credit_limit.created');
      expect(JSON.parse(event!.data)).toMatchObject({ data: { object: { uid: 'cl_portal_stream' } } });
    } finally {
      stream.close();
    }
  });

  it('ends a session’s open stream at its next check after sign-out, while the key’s own stream runs on', async () => {
    const tenant = await createTenant(store(), 'Signed-out lender');
    const { bearer } = await openSession(app, tenant.authorization);
    const session = await SseReader.open(`${base}/api/events/stream/`, { authorization: bearer });
    const keys = await SseReader.open(`${base}/api/events/stream/`, { authorization: tenant.authorization });
    try {
      expect([session.response.status, keys.response.status]).toEqual([200, 200]);
      expect((await app.inject({ method: 'DELETE', url: '/api/portal_sessions/current/', headers: { authorization: bearer } })).statusCode).toBe(204);
      while (await session.next());
      expect(session.ended).toBe(true);
      await insertCreditLimits(store(), tenant.org.id, [creditLimit({ uid: 'cl_after_sign_out' })]);
      await publishAllEvents(store(), tenant.org.id);
      const [event] = await keys.take(1);
      expect(JSON.parse(event!.data)).toMatchObject({ data: { object: { uid: 'cl_after_sign_out' } } });
    } finally {
      session.close();
      keys.close();
    }
  });

  it('refuses to store the session’s own secret in a reference or an Idempotency-Key, as it does a key', async () => {
    const tenant = await createTenant(store(), 'Careful lender', 'write');
    await insertCreditLimits(store(), tenant.org.id, [creditLimit({ uid: 'cl_portal_ref', capacity: '100.00', outstanding: '0.00' })]);
    const { bearer, grant } = await openSession(app, tenant.authorization);
    const secretPart = grant.session.slice(4);
    const reference = await postEntry(app, 'drawdown', 'cl_portal_ref', { amount: '1.00', reference: `paid ${secretPart}` }, { authorization: bearer });
    expect(reference.statusCode).toBe(422);
    expect(reference.json<{ errors: { param: string }[] }>().errors).toContainEqual(expect.objectContaining({ param: 'reference' }));
    const idempotencyKey = await postEntry(app, 'drawdown', 'cl_portal_ref', { amount: '1.00' }, { authorization: bearer, idempotencyKey: Buffer.from(grant.session).toString('base64') });
    expect(idempotencyKey.statusCode).toBe(400);
    expect(idempotencyKey.json<{ code: string }>().code).toBe('idempotency_key_invalid');
    const fine = await postEntry(app, 'drawdown', 'cl_portal_ref', { amount: '1.00', reference: 'INV-1' }, { authorization: bearer });
    expect(fine.statusCode, fine.body).toBe(201);
    const [row] = await store().query<{ n: string }>('SELECT count(*)::text AS n FROM ledger_entries WHERE org_id = $1', [tenant.org.id]);
    expect(row!.n).toBe('1');
  });

  it('keeps only hashes: neither secret is in the table', async () => {
    const tenant = await createTenant(store(), 'Hashed lender');
    const { token } = await createLink(app, tenant.authorization);
    const session = (await exchange(app, token)).json<{ session: string }>().session;
    const rows = await store().query<Record<string, unknown>>('SELECT * FROM portal_sessions WHERE org_id = $1', [tenant.org.id]);
    expect(rows).toHaveLength(1);
    const stored = JSON.stringify(rows);
    expect(stored).not.toContain(token.slice(4));
    expect(stored).not.toContain(session.slice(4));
  });
});

describeEachStore('the portal link exchange under the failed-authentication throttle', (store) => {
  let app: FastifyInstance;
  beforeAll(async () => {
    app = await buildApp({ store: store(), rateLimit: { perMinute: 0, authFailuresPerMinute: 3 } });
  });
  afterAll(async () => {
    await app.close();
  });

  it('counts each refused token against the address, then refuses even a good link until the window ends', async () => {
    const tenant = await createTenant(store(), 'Guessed lender');
    const { token } = await createLink(app, tenant.authorization);
    const guesses = [];
    for (let n = 0; n < 4; n += 1) guesses.push((await exchange(app, `lpt_${String(n).repeat(43)}`)).statusCode);
    expect(guesses.slice(0, 3)).toEqual([401, 401, 401]);
    expect(guesses[3]).toBe(429);
    const blocked = await exchange(app, token);
    expect(blocked.statusCode).toBe(429);
    expect(blocked.headers['retry-after']).toBeDefined();
  });
});
