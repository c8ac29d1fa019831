import { randomUUID } from 'node:crypto';
import { connect, type Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { EVENT_STREAM_PATH } from '../../src/http/event-stream-routes.js';
import { buildApp } from '../helpers/app.js';
import { creditLimit, insertCreditLimits } from '../helpers/records.js';
import { STREAM_TEST_HTTP, until } from '../helpers/sse.js';
import { describeEachStore } from '../helpers/stores.js';
import { createTenant, type Tenant } from '../helpers/tenants.js';
import { ledgerState } from '../helpers/writes.js';

/** Heartbeats far apart: a reader that went is noticed by its connection, not by a heartbeat's failed write. */
const SETTINGS = { heartbeatMs: 600_000, pollIntervalMs: 20, stallTimeoutMs: 600_000, bufferBytes: 16 * 1024 };
const HTTP = STREAM_TEST_HTTP;

describeEachStore('an event stream and its connection', (store) => {
  let app: FastifyInstance;
  let port: number;
  let tenant: Tenant;

  beforeAll(async () => {
    app = await buildApp({ store: store(), eventStream: SETTINGS, http: HTTP, rateLimit: { perMinute: 100_000, authFailuresPerMinute: 1000 } });
    await app.listen({ host: '127.0.0.1', port: 0 });
    port = (app.server.address() as { port: number }).port;
    tenant = await createTenant(store(), 'Stream connections', 'write');
  });
  afterAll(async () => {
    await app.close();
  });

  const openStreams = () => app.eventStreams?.slots.total ?? -1;

  /** Sends `bytes` on a new connection; resolves with the socket and what it read once the stream's headers came. */
  async function sendAndReadHeaders(bytes: string): Promise<{ socket: Socket; head: () => string }> {
    const socket = connect(port, '127.0.0.1');
    let text = '';
    socket.on('data', (chunk) => (text += chunk.toString('latin1')));
    socket.on('error', () => {});
    await new Promise<void>((resolve) => socket.once('connect', resolve));
    socket.write(bytes);
    await until(() => text.includes('\r\n\r\n'));
    return { socket, head: () => text };
  }

  const streamRequest = `GET ${EVENT_STREAM_PATH} HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n`;

  it("frees the key's place the moment its reader half-closes the connection (no heartbeat needed to notice)", async () => {
    const before = openStreams();
    const readers = await Promise.all([1, 2, 3, 4].map(() => sendAndReadHeaders(`${streamRequest}Authorization: ${tenant.authorization}\r\n\r\n`)));
    for (const { head } of readers) expect(head()).toMatch(/^HTTP\/1\.1 200 OK\r\n[\s\S]*content-type: text\/event-stream/i);
    expect(openStreams()).toBe(before + 4);
    // Each reader sends its FIN and reads on: the server must not keep streaming to (and counting) a reader that left.
    for (const { socket } of readers) socket.end();
    await until(() => openStreams() === before);
    const again = await Promise.all([1, 2, 3, 4].map(() => sendAndReadHeaders(`${streamRequest}Authorization: ${tenant.authorization}\r\n\r\n`)));
    for (const { head } of again) expect(head()).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    for (const { socket } of again) socket.destroy();
    await until(() => openStreams() === before);
  });

  it('names a Last-Event-ID that is not printable ASCII without echoing its bytes', async () => {
    // evt_ä sent as UTF-8 reaches the server as the latin1 characters Ã and ¤.
    const response = await app.inject({ url: EVENT_STREAM_PATH, headers: { authorization: tenant.authorization, 'last-event-id': 'evt_\u00c3\u00a4' } });
    expect(response.statusCode).toBe(422);
    expect(response.json<{ errors: { param: string; detail: string }[] }>().errors).toEqual([
      { param: 'Last-Event-ID', detail: 'Last-Event-ID must be one event id (evt_…) as the stream sent it, in printable ASCII' },
    ]);
  });

  it('never runs a write pipelined behind a stream (it could not be answered while the stream lasts)', async () => {
    const limit = creditLimit({ capacity: '1000.00', outstanding: '0.00' });
    await insertCreditLimits(store(), tenant.org.id, [limit]);
    const before = await ledgerState(store(), tenant.org.id, limit.uid);
    const body = JSON.stringify({ amount: '1.00' });
    const drawdown =
      `POST /api/limits/${limit.uid}/drawdowns/ HTTP/1.1\r\nHost: x\r\nAuthorization: ${tenant.authorization}\r\nIdempotency-Key: ${randomUUID()}\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
    const { socket, head } = await sendAndReadHeaders(`${streamRequest}Authorization: ${tenant.authorization}\r\n\r\n${drawdown}`);
    expect(head()).toMatch(/^HTTP\/1\.1 200 OK\r\n[\s\S]*content-type: text\/event-stream/i);
    // The stream's own events flow (the pipelined write is not among them), then the reader leaves.
    socket.destroy();
    await until(() => app.eventStreams?.open.size === 0);
    expect(await ledgerState(store(), tenant.org.id, limit.uid)).toEqual(before);
    expect(head()).not.toMatch(/HTTP\/1\.1 201/);
  });
});
