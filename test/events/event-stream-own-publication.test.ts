import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { nodeEventPublication, type NodeEventPublication } from '../../src/events/node-event-publication.js';
import { publishAllEvents } from '../../src/events/publish-events.js';
import { nodeLedger } from '../../src/node-ledger.js';
import { buildApp } from '../helpers/app.js';
import { TEST_LEDGER_SETTINGS } from '../helpers/ledger.js';
import { creditLimit, insertCreditLimits } from '../helpers/records.js';
import { SseReader } from '../helpers/sse.js';
import { describeEachStore } from '../helpers/stores.js';
import { createTenant, type Tenant } from '../helpers/tenants.js';
import { postEntry } from '../helpers/writes.js';

/** Never within a test: a stream here is woken by its own node's publication or not at all. */
const AN_HOUR_MS = 3_600_000;
/** Node's own limits but a short keep-alive: the test client's idle connections do not hold app.close(). */
const HTTP = { headersTimeoutMs: 60_000, requestTimeoutMs: 300_000, keepAliveTimeoutMs: 1000, maxConnections: 0 };

describeEachStore('an event stream on the node that publishes', (store) => {
  let app: FastifyInstance;
  let base: string;
  let tenant: Tenant;
  let node: NodeEventPublication;

  beforeAll(async () => {
    // Wired as serve wires it (server.ts): the ledger tells the publisher, whose publications wake the streams.
    node = nodeEventPublication(store(), { log: pino({ level: 'silent' }), streamPollIntervalMs: AN_HOUR_MS });
    const ledger = nodeLedger(store(), TEST_LEDGER_SETTINGS, { recorded: (orgId) => node.publisher.notify(orgId) });
    app = await buildApp({
      store: store(),
      ledger,
      eventStreamWakeups: node.streamWakeups,
      eventStream: { heartbeatMs: AN_HOUR_MS, pollIntervalMs: AN_HOUR_MS },
      http: HTTP,
    });
    base = await app.listen({ host: '127.0.0.1', port: 0 });
    tenant = await createTenant(store(), 'Own publication', 'write');
    await insertCreditLimits(store(), tenant.org.id, [creditLimit({ uid: 'cl_own', capacity: '100.00' })]);
    await publishAllEvents(store(), tenant.org.id);
  });
  afterAll(async () => {
    await app.close();
    await node.publisher.stop();
  });

  it("sends a drawdown's events as soon as this node publishes them, with no poll of the database between (an hour away)", async () => {
    const stream = await SseReader.open(`${base}/api/events/stream/`, { authorization: tenant.authorization });
    try {
      expect(stream.response.status).toBe(200);
      const drawdown = await postEntry(app, 'drawdown', 'cl_own', { amount: '12.50' }, { authorization: tenant.authorization });
      expect(drawdown.statusCode).toBe(201);
      // The limit's update and the entry's creation: it hangs here (the test's timeout) if only a poll could wake the stream.
      const received = await stream.take(2);
      expect(received.map((event) => event.event).sort()).toEqual(['credit_limit.updated', 'ledger_entry.created']);
    } finally {
      stream.close();
    }
  }, 60_000);
});
