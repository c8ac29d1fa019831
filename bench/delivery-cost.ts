/**
 * edeliver: what one webhook delivery costs the node that makes it, apart
 * from the writes that make events: DELIVERY_COST_EVENTS `entity.created`
 * events (imported into an organization of their own) wait for one endpoint,
 * then one deliverer, configured as a `serve` node runs it (nodeDeliverer:
 * its defaults, its metrics), drains them to a receiver in a child process.
 * The figures are this process's CPU (user + system) per delivery, claims
 * and recordings included, the database server's beside it, and the
 * deliveries per second; and the ratio to node's HTTP client alone (the
 * floor). ecost's drawdown makes two events: two of these.
 *
 * The database's CPU is counted per process, as a difference over the
 * drain of each one's: this database's backends and the server's own
 * processes (WAL writer, checkpointer…), not other databases' backends, so
 * the figure holds on a server that others use (a backend that ends during
 * the drain loses its share: the deliverer's pool keeps its connections).
 * The drain's end is watched at the receiver, not by counting the pending
 * deliveries every 100 ms (work that is not delivery: 0.5 to 3 µs a
 * delivery in pg_stat_statements). With pg_stat_statements preloaded (a server of one's own,
 * BENCH_SERVER_URL), the statements' cost per delivery is printed too;
 * EDELIVER_CPU_PROFILE=FILE.cpuprofile writes this process's CPU profile of
 * the drain (bench/profile-summary.ts summarizes it).
 *
 *   npm run bench -- --only edeliver        (DATABASE_URL=postgres://… or the local `lending_bench`)
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import http from 'node:http';
import { Session } from 'node:inspector/promises';
import { readFile, writeFile } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { Readable } from 'node:stream';
import { Registry } from 'prom-client';
import { renderDeliveredEvent } from '../src/events/event-body.js';
import { publishAllEvents } from '../src/events/publish-events.js';
import { importJsonl } from '../src/import/index.js';
import { createLogger } from '../src/logger.js';
import { nodeDeliverer } from '../src/node-deliverer.js';
import { createOrganization, findOrganization } from '../src/organizations/organizations.js';
import type { PostgresStore } from '../src/store/postgres-store.js';
import { createEndpoint, deleteEndpoint, listEndpoints, MAX_ENDPOINTS_PER_ORGANIZATION } from '../src/webhooks/webhook-endpoints.js';
import { SecretBox } from '../src/webhooks/secret-box.js';
import { vacuumWrittenTables } from './database.js';
import { processCpuSeconds } from './process-stats.js';
import { statementCosts, statementStatsReady } from './server-cost.js';

const DELIVERY_COST_EVENTS = 40_000;
export const DELIVERIES_ORG_UID = 'bench_deliveries';
const DRAIN_TIMEOUT_MS = 300_000;
/** Issue 47's targets: the deliverer's CPU per delivery at most this many bare POSTs, PostgreSQL's at most this many µs. */
const SERVICE_RATIO_TARGET = 2;
const POSTGRES_US_TARGET = 40;

/** A receiver answering 204 to every POST, in a process of its own so that its CPU is not counted. */
const RECEIVER_SOURCE = `
const http = require('node:http');
let received = 0;
const server = http.createServer((request, response) => { request.resume(); request.on('end', () => { received += 1; response.writeHead(204).end(); }); });
server.keepAliveTimeout = 60000;
server.listen(0, '127.0.0.1', () => process.stdout.write(server.address().port + '\\n'));
process.stdin.on('data', () => process.stdout.write(received + '\\n'));
`;

export interface DeliveryCost {
  readonly deliveries: number;
  readonly cpuUsPerDelivery: number;
  /** The database server's CPU per delivery (NaN when it runs elsewhere). */
  readonly postgresUsPerDelivery: number;
  readonly perSecond: number;
  /** The floor under any delivery: node's HTTP client alone, CPU per keep-alive POST of a delivery's body to the same receiver. */
  readonly httpClientUsPerPost: number;
}

export async function deliveryCost(store: PostgresStore, log: (line: string) => void): Promise<DeliveryCost> {
  const org = (await findOrganization(store, DELIVERIES_ORG_UID)) ?? (await createOrganization(store, 'Bench deliveries', DELIVERIES_ORG_UID));
  const { items } = await listEndpoints(store, org.id, 0, MAX_ENDPOINTS_PER_ORGANIZATION);
  for (const left of items) await deleteEndpoint(store, org.id, left.id);
  // Each run drains the same backlog, without the last run's deliveries beside it (its entities and events stay).
  await store.query('DELETE FROM webhook_attempts WHERE org_id = $1', [org.id]);
  await store.query('DELETE FROM webhook_deliveries WHERE org_id = $1', [org.id]);
  // The deliverer serves every organization with due work: another's would be attempted (and not signed) here.
  const [others] = await store.query<{ n: string }>(`SELECT count(*)::text AS n FROM webhook_deliveries WHERE org_id <> $1 AND state = 'pending'`, [org.id]);
  if (Number(others?.n) > 0) throw new Error(`(edeliver) ${others?.n} pending deliveries of other organizations in this database: edeliver would attempt them; run it on a bench database`);
  const receiver = await startReceiver();
  const box = SecretBox.fromKey(randomBytes(32));
  const { endpoint } = await createEndpoint(store, org.id, { url: `http://127.0.0.1:${receiver.port}/hook`, description: 'bench', enabledEvents: ['*'] }, box);
  try {
    log(`(edeliver) importing ${DELIVERY_COST_EVENTS} entities into ${DELIVERIES_ORG_UID} and publishing their events`);
    // New uids each run: a re-import that changes nothing makes no events.
    const run = randomBytes(4).toString('hex');
    const lines = Array.from({ length: DELIVERY_COST_EVENTS }, (_, i) => `${JSON.stringify({ object: 'entity', uid: `ent_bd_${run}_${i}`, name: `Borrower ${i}`, country: 'US' })}\n`);
    await importJsonl(store, DELIVERIES_ORG_UID, Readable.from(lines));
    await publishAllEvents(store, org.id, 5000);
    const pending = async () => Number((await store.query<{ n: string }>(`SELECT count(*)::text AS n FROM webhook_deliveries WHERE org_id = $1 AND state = 'pending'`, [org.id]))[0]?.n);
    const due = await pending();
    if (due !== DELIVERY_COST_EVENTS) throw new Error(`(edeliver) expected ${DELIVERY_COST_EVENTS} pending deliveries, found ${due}`);
    // Statistics that know the backlog, and no dead rows of earlier runs (autovacuum may be off or behind).
    await vacuumWrittenTables(store);

    log(`(edeliver) one deliverer drains ${due} deliveries`);
    const deliverer = nodeDeliverer(store, { box, destinations: { allowPrivate: true, allowHosts: [] }, claimMs: 30_000 }, new Registry(), createLogger('warn'), renderDeliveredEvent)!;
    const statements = await statementStatsReady(store);
    const receivedBefore = await receiver.received();
    const profile = await startProfile(process.env.EDELIVER_CPU_PROFILE);
    const serverBefore = await databaseCpuByProcess(store);
    const cpuBefore = process.cpuUsage();
    const started = performance.now();
    deliverer.start();
    try {
      // The receiver counts the POSTs; the database is asked only once they have all arrived (then: recorded?).
      while ((await receiver.received()) - receivedBefore < due || (await pending()) > 0) {
        if (performance.now() - started > DRAIN_TIMEOUT_MS) throw new Error(`(edeliver) deliveries still pending after ${DRAIN_TIMEOUT_MS / 1000} s`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    } finally {
      await deliverer.stop();
    }
    const seconds = (performance.now() - started) / 1000;
    const cpu = process.cpuUsage(cpuBefore);
    const server = databaseCpuSince(serverBefore, await databaseCpuByProcess(store));
    await profile?.stop();
    const received = (await receiver.received()) - receivedBefore;
    if (received < due) throw new Error(`(edeliver) the receiver got ${received} POSTs for ${due} deliveries`);
    if (statements) for (const line of await statementLines(store, due)) log(line);
    log(`(edeliver) node's HTTP client alone: ${HTTP_FLOOR_POSTS} POSTs to the same receiver`);
    const httpClientUsPerPost = await httpClientCpuPerPost(receiver.port, lines[0]!);
    const cost = {
      deliveries: due,
      cpuUsPerDelivery: (cpu.user + cpu.system) / due,
      postgresUsPerDelivery: ((server.backends + server.background) * 1e6) / due,
      perSecond: due / seconds,
      httpClientUsPerPost,
    };
    log(
      `(edeliver) ${fmt(cost.cpuUsPerDelivery)} µs CPU per delivery = ${(cost.cpuUsPerDelivery / httpClientUsPerPost).toFixed(2)}× the bare POST's ${fmt(httpClientUsPerPost)} µs ` +
        `(target ≤ ${SERVICE_RATIO_TARGET}×); PostgreSQL ${fmt(cost.postgresUsPerDelivery)} µs per delivery (target ≤ ${POSTGRES_US_TARGET}: ` +
        `${fmt((server.backends * 1e6) / due)} this database's backends, ${fmt((server.background * 1e6) / due)} the server's own processes); ${cost.perSecond.toFixed(0)} deliveries/s; load ${loadavg().map((l) => l.toFixed(1)).join(' ')}`,
    );
    return cost;
  } finally {
    await deleteEndpoint(store, org.id, endpoint.id);
    receiver.child.kill();
  }
}

const HTTP_FLOOR_POSTS = 20_000;
/** As many at once as a deliverer has in flight for one endpoint (its window). */
const HTTP_FLOOR_CONCURRENCY = 16;

/**
 * This process's CPU per POST when it does nothing but POST: the same
 * receiver, a keep-alive agent as the deliverer's (src/webhooks/endpoint-agents.ts),
 * a body of an event's size, 16 at once. No claim, rendering, signature,
 * address check or recording: what any delivery costs at least.
 */
async function httpClientCpuPerPost(port: number, record: string): Promise<number> {
  const agent = new http.Agent({ keepAlive: true, scheduling: 'lifo' });
  const body = JSON.stringify({ id: `evt_${'0'.repeat(32)}`, object: 'event', type: 'entity.created', data: { object: JSON.parse(record) } }).padEnd(600);
  const post = () =>
    new Promise<void>((resolve, reject) => {
      const request = http.request({ host: '127.0.0.1', port, path: '/hook', method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } });
      request.on('response', (response) => response.resume().on('end', resolve)).on('error', reject);
      request.end(body);
    });
  let next = 0;
  const worker = async () => {
    while (next < HTTP_FLOOR_POSTS) {
      next += 1;
      await post();
    }
  };
  try {
    await Promise.all(Array.from({ length: HTTP_FLOOR_CONCURRENCY }, worker)); // warm-up: connections open, code compiled
    next = 0;
    const before = process.cpuUsage();
    await Promise.all(Array.from({ length: HTTP_FLOOR_CONCURRENCY }, worker));
    const cpu = process.cpuUsage(before);
    return (cpu.user + cpu.system) / HTTP_FLOOR_POSTS;
  } finally {
    agent.destroy();
  }
}

export interface ReceiverProcess {
  readonly child: ChildProcess;
  readonly port: number;
  received(): Promise<number>;
}

/** A receiver answering 204 to every POST, in a process of its own (its CPU is not the deliverer's). */
export async function startReceiver(): Promise<ReceiverProcess> {
  const child = spawn(process.execPath, ['-e', RECEIVER_SOURCE], { stdio: ['pipe', 'pipe', 'inherit'] });
  const nextLine = async () => Number(String((await once(child.stdout!, 'data'))[0]).trim());
  const port = await nextLine();
  return {
    child,
    port,
    received: async () => {
      child.stdin!.write('\n');
      return nextLine();
    },
  };
}

const fmt = (us: number) => (Number.isFinite(us) ? us.toFixed(1) : 'n/a');

interface ProcessCpu {
  readonly seconds: number;
  /** Connected to no database: the server's own (WAL writer, checkpointer, background writer…). */
  readonly background: boolean;
}

/** CPU so far of each of this database's backends and of the server's own processes, by pid; undefined when the server is not local. */
async function databaseCpuByProcess(db: PostgresStore): Promise<Map<number, ProcessCpu> | undefined> {
  const rows = await db.query<{ pid: number; background: boolean }>(
    'SELECT pid, datname IS NULL AS background FROM pg_stat_activity WHERE datname = current_database() OR datname IS NULL',
  );
  const byPid = new Map<number, ProcessCpu>();
  for (const { pid, background } of rows) {
    const command = await readFile(`/proc/${pid}/comm`, 'utf8').catch(() => '');
    if (command.trim() !== 'postgres') continue;
    const seconds = await processCpuSeconds(pid).catch(() => undefined);
    if (seconds !== undefined) byPid.set(pid, { seconds, background });
  }
  return byPid.size > rows.length / 2 ? byPid : undefined;
}

/** Each process's CPU since `before` (all of it for one that started since), summed: NaN when the server is not local. */
function databaseCpuSince(before: Map<number, ProcessCpu> | undefined, after: Map<number, ProcessCpu> | undefined): { backends: number; background: number } {
  if (before === undefined || after === undefined) return { backends: Number.NaN, background: Number.NaN };
  const spent = { backends: 0, background: 0 };
  for (const [pid, now] of after) {
    const used = now.seconds - (before.get(pid)?.seconds ?? 0);
    if (now.background) spent.background += used;
    else spent.backends += used;
  }
  return spent;
}

/** pg_stat_statements since the drain began, per delivery, the costliest first. */
async function statementLines(db: PostgresStore, deliveries: number): Promise<string[]> {
  const costs = await statementCosts(db, 15);
  return [
    '(edeliver) statements per delivery (pg_stat_statements: execution and planning time, calls, rows):',
    ...costs.map(
      (c) =>
        `  ${((c.totalMs * 1000) / deliveries).toFixed(1).padStart(6)} µs ${(c.calls / deliveries).toFixed(3).padStart(6)} calls ${(c.rows / deliveries).toFixed(2).padStart(5)} rows ${c.query.replace(/\s+/g, ' ').slice(0, 120)}`,
    ),
  ];
}

/** This process's CPU profile from now until `stop`, written to `file` (none without one). */
async function startProfile(file: string | undefined): Promise<{ stop(): Promise<void> } | undefined> {
  if (!file) return undefined;
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  return {
    stop: async () => {
      const { profile } = await session.post('Profiler.stop');
      await writeFile(file, JSON.stringify(profile));
      session.disconnect();
    },
  };
}
