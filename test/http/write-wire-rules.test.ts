import { randomUUID } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { expectProblemWithIdAndHeaders } from '../helpers/answer-checks.js';
import { buildApp, json } from '../helpers/app.js';
import { rawRequest } from '../helpers/raw-http.js';
import { creditLimit, insertCreditLimits } from '../helpers/records.js';
import { describeEachStore } from '../helpers/stores.js';
import { ledgerState, postEntry, useWriter } from '../helpers/writes.js';

// How a write's request is framed on the wire: its coding, its media type, the uid in its path.
describeEachStore('a write’s wire: content coding, media type and path', (store) => {
  const { writer, newLimit } = useWriter(store);
  let app: FastifyInstance;
  let port: number;
  beforeAll(async () => {
    app = await buildApp({ store: store() });
    await app.listen({ port: 0, host: '127.0.0.1' });
    port = (app.server.address() as { port: number }).port;
  });
  afterAll(async () => {
    await app?.close();
  });

  const rawPost = (uid: string, headerLines: string[], body: Buffer) =>
    rawRequest(
      port,
      Buffer.concat([
        Buffer.from(
          `POST /api/limits/${uid}/drawdowns/ HTTP/1.1\r\nHost: x\r\nAuthorization: ${writer().authorization}\r\nIdempotency-Key: ${randomUUID()}\r\n` +
            `${headerLines.map((line) => `${line}\r\n`).join('')}Content-Length: ${body.length}\r\nConnection: close\r\n\r\n`,
        ),
        body,
      ]),
    );

  it('refuses a body with any content coding but identity (415) and writes nothing', async () => {
    const uid = await newLimit('1000.00');
    const plain = Buffer.from('{"amount": "10.00"}');
    for (const [coding, body] of [
      ['gzip', plain],
      ['gzip', gzipSync(plain)],
      ['br', plain],
      ['identity, gzip', plain],
    ] as const) {
      const response = await rawPost(uid, ['Content-Type: application/json', `Content-Encoding: ${coding}`], body);
      expectProblemWithIdAndHeaders(response, 415);
      expect(JSON.parse(response.body)).toMatchObject({ code: 'unsupported_media_type' });
      expect(response.body).toContain('Content-Encoding');
    }
    expect(await ledgerState(store(), writer().org.id, uid)).toEqual({ outstanding: '0.00', entries: 0 });

    // identity is no coding at all; and a read is not refused for a coding of a body it never reads.
    expect((await rawPost(uid, ['Content-Type: application/json', 'Content-Encoding: identity'], plain)).status).toBe(201);
    expect(await ledgerState(store(), writer().org.id, uid)).toEqual({ outstanding: '10.00', entries: 1 });
    const read = await app.inject({ url: `/api/limits/${uid}/`, headers: { authorization: writer().authorization, 'content-encoding': 'gzip' } });
    expect(read.statusCode).toBe(200);
  });

  it('refuses two Content-Type headers (400), whichever comes first, and writes nothing', async () => {
    const uid = await newLimit('1000.00');
    for (const types of [
      ['application/json', 'text/plain'],
      ['text/plain', 'application/json'],
      ['application/json', 'application/json'],
    ]) {
      const response = await rawPost(uid, types.map((type) => `Content-Type: ${type}`), Buffer.from('{"amount": "10.00"}'));
      expectProblemWithIdAndHeaders(response, 400);
      expect(JSON.parse(response.body)).toMatchObject({ code: 'bad_request', detail: 'send one Content-Type header; this request has 2' });
    }
    expect(await ledgerState(store(), writer().org.id, uid)).toEqual({ outstanding: '0.00', entries: 0 });
  });

  it('answers a uid longer than any record’s with 404 on writes and reads, without echoing it whole', async () => {
    for (const length of [101, 256, 300, 800, 5000]) {
      const uid = 'a'.repeat(length);
      for (const response of [
        await postEntry(app, 'drawdown', uid, { amount: '1.00' }, { authorization: writer().authorization }),
        await app.inject({ url: `/api/limits/${uid}/`, headers: { authorization: writer().authorization } }),
      ]) {
        expect(response.statusCode, `${length}: ${response.body.slice(0, 200)}`).toBe(404);
        expect(json(response)).toMatchObject({ code: 'not_found' });
        expect(response.body.length, `${length}`).toBeLessThan(600);
      }
    }
  });

  it('routes a limit whose longest-allowed uid is percent-encoded in the path', async () => {
    // 255 characters of 2–4 UTF-8 bytes each: over 1,000 characters once encoded in the path.
    const uid = 'é'.repeat(200) + '€'.repeat(50) + '😀'.repeat(5);
    expect([...uid].length).toBe(255);
    await insertCreditLimits(store(), writer().org.id, [creditLimit({ uid, capacity: '100.00' })]);
    const response = await postEntry(app, 'drawdown', uid, { amount: '1.00' }, { authorization: writer().authorization });
    expect(response.statusCode, response.body.slice(0, 300)).toBe(201);
    expect(json<{ limit: { uid: string } }>(response).limit.uid).toBe(uid);
  });
});
