import type { FastifyInstance } from 'fastify';
import fc from 'fast-check';
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

/** A closed stream frees its key's slot once the node sees the socket close: the reader's many reconnects stay under a high limit. */
const SETTINGS = { heartbeatMs: 200, pollIntervalMs: 20, stallTimeoutMs: 5000, perKey: 1000 };
const HTTP = { headersTimeoutMs: 60_000, requestTimeoutMs: 300_000, keepAliveTimeoutMs: 1000, maxConnections: 0 };

type Node = 0 | 1;
type Step =
  /** A drawdown through node `via`'s ledger (that node publishes it at once). */
  | { readonly kind: 'drawdown'; readonly via: Node }
  /** Limits written past the ledger (as an import does): left to the nodes' sweeps, or published at once by a third party (the CLI). */
  | { readonly kind: 'import'; readonly count: number; readonly publishNow: boolean }
  /** The reader takes up to `count` of the events the log has that it has not had yet. */
  | { readonly kind: 'read'; readonly count: number }
  /** The reader disconnects and reconnects to node `to` with Last-Event-ID (its last event). */
  | { readonly kind: 'reconnect'; readonly to: Node };

const node = fc.constantFrom<Node>(0, 1);
const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ kind: fc.constant('drawdown' as const), via: node }),
  fc.record({ kind: fc.constant('import' as const), count: fc.integer({ min: 1, max: 3 }), publishNow: fc.boolean() }),
  fc.record({ kind: fc.constant('read' as const), count: fc.integer({ min: 1, max: 4 }) }),
  fc.record({ kind: fc.constant('reconnect' as const), to: node }),
);

describeEachStore('event streams of two nodes on one database', (store) => {
  const nodes: { app: FastifyInstance; base: string; events: NodeEventPublication }[] = [];
  let tenant: Tenant;
  let serial = 0;

  beforeAll(async () => {
    for (let index = 0; index < 2; index += 1) {
      // Each node wired as serve wires it: its ledger tells its publisher, whose publications wake its streams.
      const events = nodeEventPublication(store(), { log: pino({ level: 'silent' }), streamPollIntervalMs: SETTINGS.pollIntervalMs });
      const ledger = nodeLedger(store(), TEST_LEDGER_SETTINGS, { recorded: (orgId) => events.publisher.notify(orgId) });
      const app = await buildApp({
        store: store(),
        ledger,
        eventStreamWakeups: events.streamWakeups,
        eventStream: SETTINGS,
        http: HTTP,
        rateLimit: { perMinute: 1_000_000, authFailuresPerMinute: 1000 },
      });
      nodes.push({ app, base: await app.listen({ host: '127.0.0.1', port: 0 }), events });
      events.publisher.start();
    }
    tenant = await createTenant(store(), 'Two-node stream reader', 'write');
    await insertCreditLimits(store(), tenant.org.id, [creditLimit({ uid: 'cl_prop', capacity: '1000000.00' })]);
    await publishAllEvents(store(), tenant.org.id);
  });
  afterAll(async () => {
    for (const { app, events } of nodes) {
      await app.close();
      await events.publisher.stop();
    }
  });

  /** The ids of the organization's published events, in log order. */
  const logIds = async (): Promise<string[]> => {
    const ids: string[] = [];
    let next: string | null = '/api/events/?order_by=created_at&cursor=';
    while (next !== null) {
      const response: Awaited<ReturnType<FastifyInstance['inject']>> = await nodes[0]!.app.inject({ url: next, headers: { authorization: tenant.authorization } });
      const page: { next: string | null; items: { id: string }[] } = response.json();
      ids.push(...page.items.map((item) => item.id));
      next = page.next === null ? null : new URL(page.next).pathname + new URL(page.next).search;
    }
    return ids;
  };
  /** Waits until the log holds every committed event (the sweeps publish what the ledger did not write). */
  const allPublished = async (): Promise<string[]> => {
    for (;;) {
      const [pending] = await store().query<{ n: string }>('SELECT count(*)::text AS n FROM event_outbox WHERE org_id = $1', [tenant.org.id]);
      if (pending?.n === '0') return logIds();
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };

  it('a reader moving between the nodes with Last-Event-ID gets every committed event once, in log order', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 10 }), async (steps) => {
        const before = await allPublished();
        const start = before.at(-1)!;
        const received: string[] = [];
        const open = async (to: Node) => {
          const opened = await SseReader.open(`${nodes[to]!.base}/api/events/stream/`, { authorization: tenant.authorization, 'last-event-id': received.at(-1) ?? start });
          expect(opened.response.status).toBe(200);
          return opened;
        };
        let reader = await open(0);
        const take = async (count: number) => {
          for (const event of await reader.take(count)) received.push(event.id!);
        };
        try {
          for (const action of steps) {
            if (action.kind === 'drawdown') {
              const response = await postEntry(nodes[action.via]!.app, 'drawdown', 'cl_prop', { amount: '1.00' }, { authorization: tenant.authorization });
              expect(response.statusCode).toBe(201);
            } else if (action.kind === 'import') {
              const rows = Array.from({ length: action.count }, () => creditLimit({ uid: `cl_prop_${(serial += 1)}` }));
              await insertCreditLimits(store(), tenant.org.id, rows);
              if (action.publishNow) await publishAllEvents(store(), tenant.org.id);
            } else if (action.kind === 'read') {
              // Only events the log already has: each is one the stream owes the reader.
              const owed = (await logIds()).length - before.length - received.length;
              await take(Math.min(action.count, owed));
            } else {
              reader.close();
              reader = await open(action.to);
            }
          }
          const after = await allPublished();
          await take(after.length - before.length - received.length);
          expect(received).toEqual(after.slice(before.length));
        } finally {
          reader.close();
        }
      }),
      { numRuns: 12 },
    );
  }, 240_000);
});
