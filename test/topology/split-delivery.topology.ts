import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey } from '../../src/auth/api-keys.js';
import { migrate } from '../../src/store/migrate.js';
import { PostgresStore } from '../../src/store/postgres-store.js';
import { spawnCli } from '../helpers/cli.js';
import { spawnServer, type SpawnedServer } from '../helpers/spawn-server.js';
import { createTempPostgres, postgresBinDir, type TempPostgres } from '../helpers/temp-postgres.js';
import { basicAuthorization } from '../helpers/tenants.js';
import { startPgBouncer, type PgBouncer } from '../helpers/topology.js';
import { allPublished, formatLag, lagOf, pacedDrawdowns, seedLender, writeMix, type Lender } from './event-topology-workload.js';
import { eventually, sleep } from './load.js';

const binDir = postgresBinDir();
/** A node's start on a busy 2-core machine (several starting at once): a hang, not slowness, should fail. */
const STARTUP_MS = 240_000;
const WEBHOOK_SECRET_KEY = randomBytes(32).toString('base64');
const WORKER_ENV = { WEBHOOK_SECRET_KEY, WEBHOOK_ALLOW_PRIVATE: '1', WEBHOOK_CLAIM_MS: '11000', LOG_LEVEL: 'info' };
/** Fresh events one at a time, so that their lag is the worker's wakeup (publication → receipt), not a queue's. */
const PACED = { count: 40, gapMs: 250 };
const HEARS_PUBLICATIONS = 'delivery woken by the API nodes’ publications (LISTEN)';
const ON_THE_POLL = 'delivering on the poll';

interface Worker {
  readonly child: ChildProcessWithoutNullStreams;
  readonly exited: Promise<number | string>;
  output(): string;
}

/** `lending-api deliver` as a real process, once it says it delivers. */
async function startWorker(databaseUrl: string, env: Record<string, string> = {}): Promise<Worker> {
  const child = spawnCli(['deliver', '--json'], databaseUrl, { ...WORKER_ENV, ...env });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  child.stdin.end();
  const exited = new Promise<number | string>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal ?? 'unknown')));
  await eventually(async () => out.includes('"delivering"') || child.exitCode !== null, STARTUP_MS, 'the delivery worker started');
  if (!out.includes('"delivering"')) throw new Error(`deliver did not start:\n${out}`);
  return { child, exited, output: () => out };
}

/** What the receiver was sent: every request verified with standardwebhooks against the endpoint's secret. */
interface Received {
  /** webhook-id (the event's id) → receipt times. */
  readonly times: Map<string, number[]>;
  unverified: number;
}

/**
 * Delivery where the operator wants it (docs/scaling.md "API nodes and delivery
 * workers"): two `serve --deliver off` nodes take the writes and publish their
 * events; one `lending-api deliver` process delivers them to a real local
 * receiver that verifies every request with `standardwebhooks`. Every event
 * arrives, once; a worker SIGKILLed mid-way and started again loses nothing.
 * The lag from publication to receipt is printed.
 */
describe.runIf(binDir)('API-only nodes beside a deliver-only process', () => {
  let pg: TempPostgres;
  let bouncer: PgBouncer;
  let store: PostgresStore;
  const api: SpawnedServer[] = [];
  const workers: Worker[] = [];
  let receiver: Server;
  let receiverUrl = '';
  let secret = '';
  let lender: Lender;
  const received: Received = { times: new Map(), unverified: 0 };
  const beforeEndpoint = new Set<string>();

  beforeAll(async () => {
    pg = await createTempPostgres(binDir ?? '', { settings: { max_connections: 100 } });
    store = new PostgresStore(pg.url, { poolSize: 3 });
    await migrate(store);
    bouncer = await startPgBouncer({ port: Number(new URL(pg.url).port) }, 'transaction');
    receiver = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const headers = Object.fromEntries(Object.entries(request.headers).map(([name, value]) => [name, String(value)]));
        try {
          new Webhook(secret).verify(Buffer.concat(chunks).toString('utf8'), headers);
        } catch {
          received.unverified += 1;
          response.writeHead(400).end();
          return;
        }
        const id = headers['webhook-id'] ?? '';
        received.times.set(id, [...(received.times.get(id) ?? []), Date.now()]);
        response.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const address = receiver.address();
    receiverUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/hooks`;
    const env = { ...WORKER_ENV, DATABASE_URL: pg.url, RATE_LIMIT_PER_MINUTE: '0', WRITE_RATE_LIMIT_PER_MINUTE: '0', DATABASE_POOL_SIZE: '6', LOG_LEVEL: 'warn' };
    api.push(...(await Promise.all([spawnServer(['--deliver', 'off'], env, STARTUP_MS), spawnServer(['--deliver', 'off'], env, STARTUP_MS)])));
    lender = await seedLender(store, 'Split Delivery');
    // The seed's events (published before the endpoint existed) are for no endpoint.
    await allPublished(store, lender.tenant.org.id);
    for (const event of await eventsOf()) beforeEndpoint.add(event.uid);
    const hooks = basicAuthorization(lender.tenant.org.uid, (await createApiKey(store, lender.tenant.org.uid, undefined, 'webhooks')).key);
    const created = await fetch(`${api[0]!.url}/api/webhook_endpoints/`, {
      method: 'POST',
      headers: { authorization: hooks, 'content-type': 'application/json' },
      body: JSON.stringify({ url: receiverUrl, enabled_events: ['*'] }),
    });
    expect(created.status).toBe(201);
    secret = ((await created.json()) as { secret: string }).secret;
    workers.push(await startWorker(pg.url));
  });
  afterAll(async () => {
    for (const node of [...api, ...workers]) node.child.kill('SIGKILL');
    await Promise.all([...api, ...workers].map((node) => node.exited));
    receiver?.closeAllConnections();
    receiver?.close();
    await store?.close();
    await bouncer?.destroy();
    await pg?.destroy();
  });

  /** The organization's events since `since` (exclusive of what it named before) with their publication stamps. */
  const eventsOf = async () =>
    store.query<{ uid: string; created_at: string }>(
      `SELECT uid, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS created_at FROM events WHERE org_id = $1 ORDER BY created_at, id`,
      [lender.tenant.org.id],
    );
  const everyEventReceived = async () => {
    await allPublished(store, lender.tenant.org.id);
    const events = (await eventsOf()).filter((event) => !beforeEndpoint.has(event.uid));
    await eventually(async () => events.every((event) => received.times.has(event.uid)), 180_000, 'every event delivered').catch(async (error: unknown) => {
      const missing = events.filter((event) => !received.times.has(event.uid)).map((event) => event.uid);
      const states = await store.query('SELECT state, attempts, count(*)::int AS n FROM webhook_deliveries WHERE org_id = $1 GROUP BY 1, 2', [lender.tenant.org.id]);
      throw new Error(`${String(error)}: ${missing.length} of ${events.length} missing (${missing.slice(0, 5).join(', ')}); deliveries ${JSON.stringify(states)}; worker: ${workers.at(-1)?.output().slice(-2000)}`);
    });
    return events;
  };
  /** Paced drawdowns on the API nodes: the lag from each fresh event's publication to its receipt. */
  const pacedLag = async () => {
    const before = new Set((await eventsOf()).map((event) => event.uid));
    await pacedDrawdowns(api.map((node) => node.url), lender, PACED.count, PACED.gapMs);
    const fresh = (await everyEventReceived()).filter((event) => !before.has(event.uid));
    expect(fresh.filter((event) => received.times.get(event.uid)!.length !== 1).map((event) => event.uid)).toEqual([]);
    return lagOf(fresh.map((event) => ({ createdAt: event.created_at, at: received.times.get(event.uid)![0]! })));
  };

  it('writes on two API-only nodes are delivered by the worker: every event once, signed, verified with standardwebhooks', async () => {
    const already = new Set(received.times.keys());
    await writeMix(store, api.map((node) => node.url), lender, { drawdowns: 150, loans: 30, imported: 60, concurrency: 4 });
    const events = await everyEventReceived();
    await sleep(1000);
    const fresh = events.filter((event) => !already.has(event.uid));
    expect(received.unverified).toBe(0);
    // Once each: no event was sent twice, and nothing was sent that is not in the log.
    expect(fresh.filter((event) => received.times.get(event.uid)!.length !== 1).map((event) => event.uid)).toEqual([]);
    expect(received.times.size).toBe(events.length);
    const burst = lagOf(fresh.map((event) => ({ createdAt: event.created_at, at: received.times.get(event.uid)![0]! })));
    // The worker heard its own probe notice: API-only nodes' publications wake it (LISTEN), the poll behind.
    expect(workers[0]!.output()).toContain(HEARS_PUBLICATIONS);
    const paced = await pacedLag();
    console.log(`split mode (2 API-only nodes, 1 deliver process, LISTEN), publication → receipt: paced drawdowns ${formatLag(paced)}; a burst of ${fresh.length} events ${formatLag(burst)}`);
  });

  it('a worker SIGKILLed mid-way and started again loses nothing; the API-only nodes deliver nothing meanwhile', async () => {
    const before = received.times.size;
    const writes = writeMix(store, api.map((node) => node.url), lender, { drawdowns: 200, loans: 20, imported: 40, concurrency: 2 });
    await eventually(async () => received.times.size >= before + 60, 120_000, 'deliveries under way');
    const killed = workers[0]!;
    killed.child.kill('SIGKILL');
    await killed.exited;
    // Requests in flight at the kill may still land: count from a moment after.
    await sleep(500);
    const whileDead = [...received.times.values()].reduce((n, times) => n + times.length, 0);
    await sleep(3000);
    expect([...received.times.values()].reduce((n, times) => n + times.length, 0)).toBe(whileDead);
    workers.push(await startWorker(pg.url));
    await writes;
    const events = await everyEventReceived();
    // An attempt the receiver answered but the killed worker never recorded stays claimed until its claim expires
    // (WEBHOOK_CLAIM_MS), then is sent again: every delivery ends delivered, however late the writes ended.
    const undelivered = async () =>
      (await store.query<{ n: number }>(`SELECT count(*)::int AS n FROM webhook_deliveries WHERE org_id = $1 AND state <> 'delivered'`, [lender.tenant.org.id]))[0]?.n;
    await eventually(async () => (await undelivered()) === 0, 120_000, 'every delivery recorded delivered');
    await sleep(1000);
    expect(received.unverified).toBe(0);
    expect(received.times.size).toBe(events.length);
    // At least once: such an attempt is sent again (the duplicates its webhook-id lets a receiver drop); any other
    // event arrives once.
    const twice = events.filter((event) => received.times.get(event.uid)!.length > 1).length;
    console.log(`worker SIGKILLed after ${before + 60}+ deliveries: ${events.length} events, all received; sent again after the kill: ${twice}`);
    expect(await undelivered()).toBe(0);
    expect(killed.output()).not.toMatch(/"level":(50|60)/);
  });

  it('a worker behind PgBouncer in transaction mode (no LISTEN there) delivers on its poll: every event once', async () => {
    const direct = workers.at(-1)!;
    direct.child.kill('SIGTERM');
    expect(await direct.exited).toBe(0);
    const bounced = await startWorker(bouncer.url(), { DATABASE_PREPARED_STATEMENTS: 'false' });
    workers.push(bounced);
    await eventually(async () => bounced.output().includes(ON_THE_POLL), 60_000, 'the worker saying it delivers on the poll');
    expect(bounced.output()).not.toContain(HEARS_PUBLICATIONS);
    const already = new Set(received.times.keys());
    await writeMix(store, api.map((node) => node.url), lender, { drawdowns: 150, loans: 30, imported: 60, concurrency: 4 });
    const events = await everyEventReceived();
    const fresh = events.filter((event) => !already.has(event.uid));
    const burst = lagOf(fresh.map((event) => ({ createdAt: event.created_at, at: received.times.get(event.uid)![0]! })));
    expect(received.times.size).toBe(events.length);
    expect(fresh.filter((event) => received.times.get(event.uid)!.length !== 1).map((event) => event.uid)).toEqual([]);
    expect(received.unverified).toBe(0);
    const paced = await pacedLag();
    console.log(`split mode, the worker behind PgBouncer (transaction mode: its 500 ms poll), publication → receipt: paced drawdowns ${formatLag(paced)}; a burst of ${fresh.length} events ${formatLag(burst)}`);
  });
});
