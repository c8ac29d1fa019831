import { connect } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { LendingClient, type Event } from '../../packages/client/src/index.js';
import { buildApp } from '../helpers/app.js';
import { createApiKey, revokeApiKey } from '../../src/auth/api-keys.js';
import { publishAllEvents } from '../../src/events/publish-events.js';
import type { Store } from '../../src/store/store.js';
import { creditLimit, insertCreditLimits } from '../helpers/records.js';
import { SseReader, STREAM_TEST_HTTP, until } from '../helpers/sse.js';
import { describeEachStore } from '../helpers/stores.js';
import { basicAuthorization, createTenant, type Tenant } from '../helpers/tenants.js';

/** Streams in these tests: a heartbeat every 200 ms, credentials checked every 100 ms, and a reader cut after a second of taking nothing. */
const SETTINGS = { heartbeatMs: 200, credentialCheckMs: 100, pollIntervalMs: 20, stallTimeoutMs: 1000, bufferBytes: 16 * 1024 };
const HTTP = STREAM_TEST_HTTP;

interface ApiEvent {
  id: string;
  type: string;
  created_at: string;
  data: { object: { uid: string } };
}

describeEachStore('GET /api/events/stream/', (store) => {
  let app: FastifyInstance;
  let base: string;
  let tenant: Tenant;
  let serial = 0;

  beforeAll(async () => {
    app = await buildApp({ store: store(), eventStream: SETTINGS, http: HTTP, rateLimit: { perMinute: 100_000, authFailuresPerMinute: 1000 } });
    base = await app.listen({ host: '127.0.0.1', port: 0 });
    tenant = await createTenant(store(), 'Stream reader');
  });
  afterAll(async () => {
    await app.close();
  });

  const headers = (extra: Record<string, string> = {}) => ({ authorization: tenant.authorization, ...extra });
  const open = (query = '', extra: Record<string, string> = {}) => SseReader.open(`${base}/api/events/stream/${query}`, headers(extra));
  /** Creates `count` credit limits and publishes their events; the events of the log after it, oldest first. */
  const write = async (count: number, db: Store = store()): Promise<ApiEvent[]> => {
    const before = await logEvents();
    const rows = Array.from({ length: count }, () => creditLimit({ uid: `cl_stream_${(serial += 1)}` }));
    await insertCreditLimits(db, tenant.org.id, rows);
    await publishAllEvents(db, tenant.org.id);
    return (await logEvents()).slice(before.length);
  };
  const logEvents = async (): Promise<ApiEvent[]> => {
    const events: ApiEvent[] = [];
    let next: string | null = '/api/events/?order_by=created_at&cursor=';
    while (next !== null) {
      const response: Awaited<ReturnType<FastifyInstance['inject']>> = await app.inject({ url: next, headers: headers() });
      const page: { next: string | null; items: ApiEvent[] } = response.json();
      events.push(...page.items);
      next = page.next === null ? null : new URL(page.next).pathname + new URL(page.next).search;
    }
    return events;
  };
  const ids = (events: readonly { id?: string | undefined }[]) => events.map((event) => event.id);

  it('starts at the end of the log and sends each new event as id, event and data exactly as GET /api/events/{id}/ renders it', async () => {
    await write(3);
    const stream = await open();
    try {
      expect(stream.response.status).toBe(200);
      expect(stream.response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
      expect(stream.response.headers.get('cache-control')).toBe('no-store');
      // Opening it was one request of the key's budget, however many events it carries.
      const remaining = Number(stream.response.headers.get('x-ratelimit-remaining'));
      const after = await app.inject({ url: '/api/events/?page=1', headers: headers() });
      expect(Number(after.headers['x-ratelimit-remaining'])).toBe(remaining - 1);
      const written = await write(12);
      const received = await stream.take(12);
      expect(ids(received)).toEqual(ids(written));
      for (const event of received) {
        const one = await app.inject({ url: `/api/events/${event.id}/`, headers: headers() });
        expect(event.data).toBe(one.body);
        expect(event.event).toBe(JSON.parse(one.body).type);
      }
    } finally {
      stream.close();
    }
  });

  it('resumes after the event Last-Event-ID names, and starts at created_from (inclusive)', async () => {
    const written = await write(15);
    const resumed = await open('', { 'last-event-id': written[4]!.id });
    const from = await open(`?created_from=${encodeURIComponent(written[7]!.created_at)}`);
    try {
      expect(ids(await resumed.take(10))).toEqual(ids(written.slice(5)));
      expect(ids(await from.take(8))).toEqual(ids(written.slice(7)));
      const more = await write(2);
      expect(ids(await resumed.take(2))).toEqual(ids(more));
      expect(ids(await from.take(2))).toEqual(ids(more));
    } finally {
      resumed.close();
      from.close();
    }
  });

  it('filters by type and object as the log does', async () => {
    const [created] = await write(1);
    const uid = created!.data.object.uid;
    const stream = await open(`?type=credit_limit.updated&object=${uid}&created_from=${encodeURIComponent(created!.created_at)}`);
    try {
      await write(2);
      await store().query(`UPDATE credit_limits SET outstanding = outstanding + 1, updated_at = now() WHERE org_id = $1 AND uid = $2`, [tenant.org.id, uid]);
      await publishAllEvents(store(), tenant.org.id);
      const [updated] = await stream.take(1);
      expect(updated!.event).toBe('credit_limit.updated');
      expect(JSON.parse(updated!.data).data.object.uid).toBe(uid);
    } finally {
      stream.close();
    }
  });

  it('sends a comment line when nothing happened for the heartbeat interval', async () => {
    const stream = await open();
    try {
      expect(await stream.untilComments(3)).toEqual([]);
    } finally {
      stream.close();
    }
  });

  it('refuses unknown parameters, a malformed type and an unknown Last-Event-ID with 422 naming them', async () => {
    const answer = async (query: string, extra: Record<string, string> = {}) => {
      const response = await app.inject({ url: `/api/events/stream/${query}`, headers: headers(extra) });
      return { status: response.statusCode, params: (response.json<{ errors?: { param: string }[] }>().errors ?? []).map((error) => error.param) };
    };
    expect(await answer('?order_by=created_at&cursor=')).toEqual({ status: 422, params: ['order_by', 'cursor'] });
    expect(await answer('?type=nothing.*')).toEqual({ status: 422, params: ['type'] });
    expect(await answer('', { 'last-event-id': 'evt_unknown' })).toEqual({ status: 422, params: ['Last-Event-ID'] });
    expect((await app.inject({ url: '/api/events/stream/' })).statusCode).toBe(401);
  });

  it('lets a key open at most 4 streams at once: the 5th is a 429, and a closed one frees its place', async () => {
    const key = await createApiKey(store(), tenant.org.uid);
    const authorization = basicAuthorization(tenant.org.uid, key.key);
    const streams = await Promise.all([1, 2, 3, 4].map(() => SseReader.open(`${base}/api/events/stream/`, { authorization })));
    try {
      expect(streams.map((stream) => stream.response.status)).toEqual([200, 200, 200, 200]);
      const fifth = await fetch(`${base}/api/events/stream/`, { headers: { authorization } });
      expect(fifth.status).toBe(429);
      expect(fifth.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(((await fifth.json()) as { code: string }).code).toBe('rate_limited');
      // Another key of the organization is not refused.
      const other = await open();
      expect(other.response.status).toBe(200);
      other.close();
      streams[0]!.close();
      await until(async () => {
        const again = await SseReader.open(`${base}/api/events/stream/`, { authorization });
        again.close();
        return again.response.status === 200;
      });
    } finally {
      for (const stream of streams) stream.close();
    }
  });

  it("ends a revoked key's open stream at its next check, refuses its reconnection, and leaves the organization's other keys streaming", async () => {
    const key = await createApiKey(store(), tenant.org.uid);
    const authorization = basicAuthorization(tenant.org.uid, key.key);
    const revoked = await SseReader.open(`${base}/api/events/stream/`, { authorization });
    const other = await open();
    try {
      expect([revoked.response.status, other.response.status]).toEqual([200, 200]);
      const [first] = await write(1);
      expect((await revoked.take(1)).map((event) => event.id)).toEqual([first!.id]);
      await revokeApiKey(store(), key.id);
      // Events written meanwhile may still reach it; then it ends (heartbeats are not events).
      while (await revoked.next());
      expect(revoked.ended).toBe(true);
      expect((await fetch(`${base}/api/events/stream/`, { headers: { authorization, 'last-event-id': first!.id } })).status).toBe(401);
      const [later] = await write(1);
      expect((await other.take(2)).map((event) => event.id)).toEqual([first!.id, later!.id]);
    } finally {
      revoked.close();
      other.close();
    }
  });

  it('cuts a reader that stops reading, having buffered no more than its bound for it', async () => {
    // An organization of its own, whose log holds more than the sockets' buffers (loopback grows them to a few
    // MiB): 20,000 copies of one real event (about 9 MB as frames), published straight into the log after
    // everything in it, as a publication stamps them.
    const stalled = await createTenant(store(), 'Stalled reader');
    await insertCreditLimits(store(), stalled.org.id, [creditLimit({ uid: 'cl_stalled' })]);
    await publishAllEvents(store(), stalled.org.id);
    await store().query(
      `WITH model AS (SELECT * FROM events WHERE org_id = $1 LIMIT 1), stamped AS (
         SELECT g, (SELECT published_through FROM event_streams WHERE org_id = $1) + g * interval '1 microsecond' AS at FROM generate_series(1, $2::int) g
       ), inserted AS (
         INSERT INTO events (org_id, uid, type, object_uid, data_object, created_at)
         SELECT $1, 'evt_' || md5('stalled' || g), m.type, m.object_uid, m.data_object, s.at FROM stamped s, model m
         RETURNING created_at
       )
       UPDATE event_streams SET published_through = (SELECT max(created_at) FROM inserted) WHERE org_id = $1`,
      [stalled.org.id, 20_000],
    );
    const streams = app.eventStreams!;
    const socket = connect({ host: '127.0.0.1', port: Number(new URL(base).port) });
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    let closed = false;
    socket.once('close', () => (closed = true));
    socket.on('error', () => {});
    // Sends the request, from the start of the log, then reads nothing.
    socket.pause();
    socket.write(`GET /api/events/stream/?created_from=2000-01-01 HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${stalled.authorization}\r\nAccept: text/event-stream\r\n\r\n`);
    const streamOf = () => [...streams.open.keys()].find((body) => body.orgId === stalled.org.id);
    await until(() => streamOf() !== undefined);
    const body = streamOf();
    await until(() => body!.destroyed);
    // Reading again, the reader gets what the sockets held, then the end of the connection.
    socket.on('data', () => {});
    socket.resume();
    await until(() => closed);
    // The node held at most its buffer and one event beyond it for the reader, not the 20,000 events it had to send.
    expect(body!.maxBuffered).toBeLessThanOrEqual(SETTINGS.bufferBytes + 4096);
    await until(() => streamOf() === undefined);
  });

  it('serves on every node the events written and published elsewhere (two apps, one database)', async () => {
    const other = await buildApp({ store: store(), eventStream: SETTINGS, http: HTTP });
    const otherBase = await other.listen({ host: '127.0.0.1', port: 0 });
    try {
      const here = await open();
      const there = await SseReader.open(`${otherBase}/api/events/stream/`, headers());
      try {
        // Written and published by neither app: only the database tells them.
        const written = await write(3);
        expect(ids(await here.take(3))).toEqual(ids(written));
        expect(ids(await there.take(3))).toEqual(ids(written));
      } finally {
        here.close();
        there.close();
      }
    } finally {
      await other.close();
    }
  });

  it("client.events.stream() yields each event once, reconnecting with Last-Event-ID when the server cuts it", async () => {
    const client = new LendingClient({ baseUrl: base, organizationId: tenant.org.uid, apiKey: tenant.apiKey });
    const stop = new AbortController();
    const reconnects: (string | undefined)[] = [];
    // After the last event in the log now (from the start when there is none): events written next are the stream's.
    const lastEventId = (await logEvents()).at(-1)?.id;
    const iterator = client.events.stream(lastEventId ? { lastEventId } : { created_from: '2000-01-01' }, { signal: stop.signal, onReconnect: ({ lastEventId }) => reconnects.push(lastEventId) })[Symbol.asyncIterator]();
    const take = async (count: number): Promise<Event[]> => {
      const taken: Event[] = [];
      while (taken.length < count) {
        const next = await iterator.next();
        if (next.done) throw new Error('the stream ended');
        taken.push(next.value);
      }
      return taken;
    };
    try {
      const pending = take(3);
      const first = await write(3);
      expect((await pending).map((event) => event.id)).toEqual(ids(first));
      // The server cuts every stream (as it cuts a reader that fell behind); events are written meanwhile.
      for (const [body] of app.eventStreams!.open) body.destroy(new Error('cut by the test'));
      const meanwhile = await write(4);
      expect((await take(4)).map((event) => event.id)).toEqual(ids(meanwhile));
      expect(reconnects).toEqual([first.at(-1)!.id]);
    } finally {
      stop.abort();
      await iterator.return?.(undefined);
    }
  });
});
