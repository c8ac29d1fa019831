import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { Readable } from 'node:stream';
import fc from 'fast-check';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey } from '../../src/auth/api-keys.js';
import type { KeyScope } from '../../src/auth/key-scope.js';
import { importJsonl } from '../../src/import/index.js';
import type { PostgresStore } from '../../src/store/postgres-store.js';
import { creditLimit, insertCreditLimits, insertPaymentMethods, paymentMethod } from '../helpers/records.js';
import type { SpawnedServer } from '../helpers/spawn-server.js';
import { postgresBinDir } from '../helpers/temp-postgres.js';
import { basicAuthorization, type Tenant } from '../helpers/tenants.js';
import { startTwoNodes, UNBOUNDED_WAITS, type TwoNodes } from '../helpers/two-nodes.js';

const binDir = postgresBinDir();
const LIMITS = ['cl_e0', 'cl_e1'];
const PAYMENT_METHOD = 'pm_e';

/** What a round asks of the service; `node` alternates the two processes. */
type Step =
  | { readonly kind: 'drawdown' | 'repayment'; readonly limit: number; readonly cents: number }
  | { readonly kind: 'loan'; readonly limit: number; readonly cents: number }
  | { readonly kind: 'loan-repayment'; readonly loan: number; readonly cents: number; readonly full: boolean }
  /** The same key and body again, to the other process: a replay, which must emit nothing. */
  | { readonly kind: 'replay'; readonly of: number }
  /** A drawdown beyond any balance: 409, nothing written, nothing emitted. */
  | { readonly kind: 'refused'; readonly limit: number }
  /** An import: a new entity, and the payment method's type set (a change only when it differs). */
  | { readonly kind: 'import'; readonly methodType: 'ACH' | 'SEPA' };

/** How the receiver answers during a round: each event's first attempt only (its retry always succeeds). */
type ReceiverMood = 'ok' | 'fails' | 'slow' | 'down';

interface ExpectedEvent {
  readonly type: string;
  /** The Idempotency-Key of the write, or `import` for an import's. */
  readonly cause: string;
  readonly object: string;
}

interface LoggedEvent {
  readonly id: string;
  readonly type: string;
  readonly created_at: string;
  readonly idempotency_key: string | null;
  readonly import_id: string | null;
  readonly data: { readonly object: Record<string, unknown> };
}

const cents = fc.integer({ min: 1, max: 30_000 });
const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constantFrom('drawdown' as const, 'repayment' as const), limit: fc.nat(LIMITS.length - 1), cents }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('loan' as const), limit: fc.nat(LIMITS.length - 1), cents }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('loan-repayment' as const), loan: fc.nat(), cents, full: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('replay' as const), of: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('refused' as const), limit: fc.nat(LIMITS.length - 1) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('import' as const), methodType: fc.constantFrom('ACH' as const, 'SEPA' as const) }) },
);
const mood = fc.constantFrom<ReceiverMood>('ok', 'fails', 'slow', 'down');

// Random interleavings of every kind of change, over two real `serve`
// processes on one PostgreSQL, with a receiver whose first answer to an
// event is sometimes a failure, slow or a dropped connection. Afterwards:
// every committed change has exactly its events (a replay and a refusal
// none), a cursor walk of /api/events/ from either node returns them all,
// the walks made between rounds from the last event seen missed none, and
// every event reached the endpoint at least once, signed so that the
// reference implementation of Standard Webhooks accepts it, with the body
// the log gives.
describe.runIf(binDir)('events and webhooks over two serve processes (model)', () => {
  let nodes: TwoNodes | undefined;
  let store: PostgresStore;
  let tenant: Tenant;
  let servers: readonly SpawnedServer[] = [];
  let webhooksAuthorization = '';
  let secret = '';
  let receiver: Server;
  let receiverMood: ReceiverMood = 'ok';
  /** webhook-id → the bodies received for it (every one verified). */
  const delivered = new Map<string, string[]>();
  const attempted = new Set<string>();
  const signatureFailures: string[] = [];
  const expected: ExpectedEvent[] = [];
  const loans: { uid: string; principal: string }[] = [];
  const sentWrites: { key: string; path: string; body: string }[] = [];
  /** Every event seen by the walks made between rounds, from the last one seen. */
  const walked = new Map<string, LoggedEvent>();
  let lastSeen: string | undefined;
  let baseline = new Set<string>();
  let sent = 0;
  let imports = 0;

  beforeAll(async () => {
    receiver = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const body = Buffer.concat(chunks).toString();
        const id = String(request.headers['webhook-id']);
        const first = !attempted.has(id);
        attempted.add(id);
        if (first && receiverMood === 'down') return request.socket.destroy();
        if (first && receiverMood === 'fails') return void response.writeHead(500).end('not now');
        try {
          new Webhook(secret).verify(body, request.headers as Record<string, string>);
        } catch (error) {
          signatureFailures.push(`${id}: ${String(error)}`);
        }
        delivered.set(id, [...(delivered.get(id) ?? []), body]);
        const answer = () => response.writeHead(204).end();
        if (first && receiverMood === 'slow') setTimeout(answer, 300);
        else answer();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const address = receiver.address();
    const port = typeof address === 'object' && address ? address.port : 0;

    nodes = await startTwoNodes(
      binDir ?? '',
      'Events model lender',
      async (seedStore, seedTenant) => {
        await insertCreditLimits(seedStore, seedTenant.org.id, LIMITS.map((uid) => creditLimit({ uid, entity: 'ent_e', currency: 'USD', capacity: '1000.00', outstanding: '0.00' })));
        await insertPaymentMethods(seedStore, seedTenant.org.id, [paymentMethod({ uid: PAYMENT_METHOD, entity: 'ent_e', currency: 'USD', type: 'ACH' })]);
      },
      { ...UNBOUNDED_WAITS, WEBHOOK_ALLOW_PRIVATE: '1', WEBHOOK_SECRET_KEY: randomBytes(32).toString('base64') },
    );
    ({ store, tenant, servers } = nodes);
    const webhooksKey = await createApiKey(store, tenant.org.uid, undefined, 'webhooks' as KeyScope);
    webhooksAuthorization = basicAuthorization(tenant.org.uid, webhooksKey.key);
    const created = await fetch(`${servers[0]?.url}/api/webhook_endpoints/`, {
      method: 'POST',
      headers: { authorization: webhooksAuthorization, 'content-type': 'application/json', 'idempotency-key': 'endpoint-1' },
      body: JSON.stringify({ url: `http://127.0.0.1:${port}/hooks`, enabled_events: ['*'] }),
    });
    const endpoint = (await created.json()) as { id: string; secret: string };
    expect(created.status, JSON.stringify(endpoint)).toBe(201);
    secret = endpoint.secret;
    // The seed's own events (created before the endpoint) are not the model's.
    baseline = new Set((await walkAll(0)).map((event) => event.id));
  }, 300_000);

  afterAll(async () => {
    await nodes?.stop();
    receiver?.closeAllConnections();
    await new Promise<void>((resolve) => (receiver ? receiver.close(() => resolve()) : resolve()));
  });

  const money = (amount: number) => `${Math.floor(amount / 100)}.${String(amount % 100).padStart(2, '0')}`;

  const post = async (node: number, path: string, body: string, key: string, authorization = tenant.authorization) => {
    const response = await fetch(`${servers[node % servers.length]?.url}${path}`, {
      method: 'POST',
      headers: { authorization, 'content-type': 'application/json', 'idempotency-key': key },
      body,
    });
    return { status: response.status, replayed: response.headers.get('idempotent-replayed') === 'true', json: (await response.json()) as Record<string, unknown> };
  };

  /** GET a whole cursor walk, oldest first, from one node; `from` (inclusive) starts it at an event's created_at. */
  async function walkAll(node: number, from?: string): Promise<LoggedEvent[]> {
    const events: LoggedEvent[] = [];
    const query = new URLSearchParams({ order_by: 'created_at', cursor: '' });
    if (from) query.set('created_from', from);
    let next: string | null = `${servers[node]?.url}/api/events/?${query.toString()}`;
    while (next) {
      const response = await fetch(next, { headers: { authorization: tenant.authorization } });
      const page = (await response.json()) as { items: LoggedEvent[]; next: string | null };
      expect(response.status, JSON.stringify(page)).toBe(200);
      events.push(...page.items);
      // Oldest first, the log always links a next page (to poll later): an empty page is its end for now.
      next = page.items.length === 0 ? null : page.next;
    }
    return events;
  }

  /** Until the outbox is empty: every committed event is in the log. */
  async function published(): Promise<void> {
    for (let i = 0; i < 600; i += 1) {
      const [row] = await store.query<{ n: string }>('SELECT count(*)::text AS n FROM event_outbox WHERE org_id = $1', [tenant.org.id]);
      if (row?.n === '0') return;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error('the outbox was never emptied');
  }

  const expect201 = (key: string, types: readonly [string, string][]) => {
    for (const [type, object] of types) expected.push({ type, cause: key, object });
  };

  async function run(node: number, s: Step): Promise<void> {
    switch (s.kind) {
      case 'drawdown':
      case 'repayment': {
        const key = `model-${(sent += 1)}`;
        const path = `/api/limits/${LIMITS[s.limit]}/${s.kind}s/`;
        const body = JSON.stringify({ amount: money(s.cents) });
        sentWrites.push({ key, path, body });
        const answer = await post(node, path, body, key);
        expect([201, 409]).toContain(answer.status);
        if (answer.status === 201) {
          const entry = answer.json.entry as { id: string };
          expect201(key, [['ledger_entry.created', entry.id], ['credit_limit.updated', String(LIMITS[s.limit])]]);
        }
        return;
      }
      case 'loan': {
        const key = `model-${(sent += 1)}`;
        const body = JSON.stringify({ credit_limit: LIMITS[s.limit], payment_method: PAYMENT_METHOD, principal: money(s.cents) });
        sentWrites.push({ key, path: '/api/loans/', body });
        const answer = await post(node, '/api/loans/', body, key);
        expect([201, 409]).toContain(answer.status);
        if (answer.status === 201) {
          const loan = answer.json.loan as { uid: string; principal: number };
          loans.push({ uid: loan.uid, principal: loan.principal.toFixed(2) });
          expect201(key, [['loan.created', loan.uid], ['credit_limit.updated', String(LIMITS[s.limit])]]);
          expected.push({ type: 'ledger_entry.created', cause: key, object: '*' });
        }
        return;
      }
      case 'loan-repayment': {
        const loan = loans[s.loan % Math.max(1, loans.length)];
        if (!loan) return;
        const key = `model-${(sent += 1)}`;
        const path = `/api/loans/${loan.uid}/repayments/`;
        const body = JSON.stringify({ amount: s.full ? loan.principal : money(s.cents) });
        sentWrites.push({ key, path, body });
        const answer = await post(node, path, body, key);
        expect([201, 409]).toContain(answer.status);
        if (answer.status === 201) {
          const after = answer.json.loan as { uid: string; status: string; credit_limit: string };
          expect201(key, [['credit_limit.updated', after.credit_limit], [after.status === 'repaid' ? 'loan.repaid' : 'loan.updated', after.uid]]);
          expected.push({ type: 'ledger_entry.created', cause: key, object: '*' });
        }
        return;
      }
      case 'replay': {
        const earlier = sentWrites[s.of % Math.max(1, sentWrites.length)];
        if (!earlier) return;
        const answer = await post(node, earlier.path, earlier.body, earlier.key);
        expect(answer.replayed).toBe(true);
        return;
      }
      case 'refused': {
        const key = `model-${(sent += 1)}`;
        const answer = await post(node, `/api/limits/${LIMITS[s.limit]}/drawdowns/`, JSON.stringify({ amount: '5000.00' }), key);
        expect(answer.status).toBe(409);
        return;
      }
      case 'import': {
        imports += 1;
        const entity = `ent_import_${imports}`;
        const [method] = await store.query<{ entity: string; type: string; currency: string; last_2: string }>(
          'SELECT entity, type, currency, last_2 FROM payment_methods WHERE org_id = $1 AND uid = $2',
          [tenant.org.id, PAYMENT_METHOD],
        );
        const lines = [
          { object: 'entity', uid: entity, name: `Imported ${imports}`, country: 'GB' },
          { object: 'payment_method', uid: PAYMENT_METHOD, entity: 'ent_e', type: s.methodType, currency: 'USD', last_2: '89' },
        ];
        await importJsonl(store, tenant.org.uid, Readable.from(lines.map((line) => `${JSON.stringify(line)}\n`)));
        expected.push({ type: 'entity.created', cause: 'import', object: entity });
        // A change of any of its fields is an update; the same values again are none.
        const line = lines[1] as { entity: string; type: string; currency: string; last_2: string };
        const changed = !method || (['entity', 'type', 'currency', 'last_2'] as const).some((field) => method[field] !== line[field]);
        if (changed) expected.push({ type: 'payment_method.updated', cause: 'import', object: PAYMENT_METHOD });
        return;
      }
    }
  }

  it('every committed change has exactly its events, in the log and at the endpoint, and no walk misses one', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.record({ mood, steps: fc.array(step, { minLength: 1, maxLength: 10 }) }), { minLength: 1, maxLength: 4 }), async (rounds) => {
        for (const round of rounds) {
          receiverMood = round.mood;
          // Imports and replays of this round run after its writes (an import waits for no write; a replay needs its first answer).
          const writes = round.steps.filter((s) => s.kind !== 'import' && s.kind !== 'replay');
          await Promise.all(writes.map((s, i) => run(i, s)));
          for (const [i, s] of round.steps.entries()) if (s.kind === 'import' || s.kind === 'replay') await run(i, s);
          // A client's walk from the last event it saw (inclusive; it drops the one it had).
          await published();
          for (const event of await walkAll(sent % 2, lastSeen)) walked.set(event.id, event);
          lastSeen = [...walked.values()].at(-1)?.created_at ?? lastSeen;
        }
      }),
      { numRuns: 6, endOnFailure: true },
    );
    await published();

    const log = (await walkAll(1)).filter((event) => !baseline.has(event.id));
    const fromOtherNode = (await walkAll(0)).filter((event) => !baseline.has(event.id));
    expect(fromOtherNode.map((event) => event.id)).toEqual(log.map((event) => event.id));
    // Oldest first, strictly.
    const stamps = log.map((event) => event.created_at);
    expect([...stamps].sort()).toEqual(stamps);
    expect(new Set(stamps).size).toBe(stamps.length);

    // Exactly the model's events: one per committed change, none for a replay or a refusal.
    const causeOf = (event: LoggedEvent) => (event.import_id ? 'import' : (event.idempotency_key ?? 'none'));
    const actual = log.map((event) => `${event.type} ${causeOf(event)} ${event.type === 'ledger_entry.created' && event.data.object.loan ? '*' : String(event.data.object.uid ?? event.data.object.id)}`);
    const wanted = expected.map((event) => `${event.type} ${event.cause} ${event.object}`);
    expect([...actual].sort()).toEqual([...wanted].sort());

    // The walks between rounds, each from the last event seen, missed nothing.
    expect(log.filter((event) => !walked.has(event.id)).map((event) => `${event.type} ${event.id}`)).toEqual([]);

    // Every event reached the endpoint, at least once, verified, with the log's body.
    for (let i = 0; i < 600 && log.some((event) => !delivered.has(event.id)); i += 1) await new Promise((resolve) => setTimeout(resolve, 100));
    expect(log.filter((event) => !delivered.has(event.id)).map((event) => `${event.type} ${event.id}`)).toEqual([]);
    expect(signatureFailures).toEqual([]);
    for (const event of log) for (const body of delivered.get(event.id) ?? []) expect(JSON.parse(body)).toEqual(event);
    expect(expected.length).toBeGreaterThan(0);
  }, 900_000);
});
