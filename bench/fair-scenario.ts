/**
 * efair (issue 47, SPEC §3c Isolation): organizations take turns at
 * delivery. Organization A has FAIR_ENDPOINTS endpoints and FAIR_EVENTS
 * events waiting for each (80,000 deliveries) to a receiver in a process of
 * its own; organization B has one endpoint, to a receiver here, and publishes
 * an event every FRESH_EVERY_MS while A's backlog drains. B's lag is from
 * each event's publication (its `created_at`, PostgreSQL's clock on this
 * machine) to its arrival here. Once with one deliverer, once with two (two
 * nodes: a pool each; B's events are published on the first, which is woken
 * as a serve node's publication wakes it). Target: B's p99 ≤ 500 ms.
 *
 *   npm run bench -- --only efair        (DATABASE_URL=postgres://… or the local `lending_bench`)
 */
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { Registry } from 'prom-client';
import { renderDeliveredEvent } from '../src/events/event-body.js';
import { publishAllEvents } from '../src/events/publish-events.js';
import { importJsonl } from '../src/import/index.js';
import { createLogger } from '../src/logger.js';
import { nodeDeliverer } from '../src/node-deliverer.js';
import { createOrganization, findOrganization, type Organization } from '../src/organizations/organizations.js';
import { migrate } from '../src/store/migrate.js';
import { PostgresStore } from '../src/store/postgres-store.js';
import type { Deliverer } from '../src/webhooks/deliverer.js';
import { createEndpoint, deleteEndpoint, listEndpoints, MAX_ENDPOINTS_PER_ORGANIZATION } from '../src/webhooks/webhook-endpoints.js';
import { SecretBox } from '../src/webhooks/secret-box.js';
import { percentile } from './burst-client.js';
import { benchDatabaseUrl, vacuumWrittenTables } from './database.js';
import { startReceiver } from './delivery-cost.js';
import { writeBenchRecord, type MeasuredRow } from './results-record.js';

export const FAIR_SCENARIO_ID = 'efair';
const FAIR_ENDPOINTS = 10;
const FAIR_EVENTS = 8000;
const FRESH_EVERY_MS = 200;
const LAG_TARGET_MS = 500;
const DRAIN_TIMEOUT_MS = 600_000;
const A_UID = 'bench_fair_a';
const B_UID = 'bench_fair_b';

export interface FairRun {
  readonly nodes: number;
  readonly backlog: number;
  readonly drainSeconds: number;
  readonly lags: readonly number[];
}

export async function runFairScenario(log: (line: string) => void): Promise<string[]> {
  const databaseUrl = await benchDatabaseUrl();
  const store = new PostgresStore(databaseUrl, { poolSize: 4 });
  const rows: MeasuredRow[] = [];
  const lines: string[] = [];
  try {
    await migrate(store);
    for (const nodes of [1, 2]) {
      const run = await fairRun(store, databaseUrl, nodes, log);
      const [p50, p99] = [percentile([...run.lags], 50), percentile([...run.lags], 99)];
      const title = `B's lag from publication beside A's ${run.backlog.toLocaleString('en-US')}-delivery backlog, ${nodes} node${nodes > 1 ? 's' : ''}`;
      rows.push({ id: `efair-${nodes}`, title, connections: 0, service: { perSecond: run.backlog / run.drainSeconds, p50, p99, failures: 0 } });
      lines.push(
        `(efair) ${nodes} node${nodes > 1 ? 's' : ''}: A's ${run.backlog} deliveries drained in ${run.drainSeconds.toFixed(1)} s (${(run.backlog / run.drainSeconds).toFixed(0)}/s); ` +
          `B's ${run.lags.length} events meanwhile: lag p50 ${p50.toFixed(1)} ms, p99 ${p99.toFixed(1)} ms, max ${Math.max(...run.lags).toFixed(1)} ms ` +
          `(target p99 ≤ ${LAG_TARGET_MS} ms ${p99 <= LAG_TARGET_MS ? '✓' : '✗'})`,
      );
    }
  } finally {
    await store.close();
  }
  lines.push(`record of this run: ${await writeBenchRecord({ rows, database: 'PostgreSQL (DATABASE_URL or the local lending_bench)', peakRssMiB: { service: NaN, bare: NaN } })}`);
  return lines;
}

async function organization(store: PostgresStore, uid: string, name: string): Promise<Organization> {
  const org = (await findOrganization(store, uid)) ?? (await createOrganization(store, name, uid));
  const { items } = await listEndpoints(store, org.id, 0, MAX_ENDPOINTS_PER_ORGANIZATION);
  for (const left of items) await deleteEndpoint(store, org.id, left.id);
  await store.query('DELETE FROM webhook_attempts WHERE org_id = $1', [org.id]);
  await store.query('DELETE FROM webhook_deliveries WHERE org_id = $1', [org.id]);
  return org;
}

/** New uids each time: a re-import that changes nothing makes no events. */
function entityLines(count: number): string[] {
  const run = randomBytes(4).toString('hex');
  return Array.from({ length: count }, (_, i) => `${JSON.stringify({ object: 'entity', uid: `ent_fair_${run}_${i}`, name: `Borrower ${i}`, country: 'US' })}\n`);
}

async function fairRun(store: PostgresStore, databaseUrl: string, nodeCount: number, log: (line: string) => void): Promise<FairRun> {
  const a = await organization(store, A_UID, 'Bench fair A');
  const b = await organization(store, B_UID, 'Bench fair B');
  const [others] = await store.query<{ n: string }>(`SELECT count(*)::text AS n FROM webhook_deliveries WHERE org_id <> ALL ($1::bigint[]) AND state = 'pending'`, [[a.id, b.id]]);
  if (Number(others?.n) > 0) throw new Error(`(efair) ${others?.n} pending deliveries of other organizations in this database: efair would attempt them; run it on a bench database`);
  const box = SecretBox.fromKey(randomBytes(32));
  const backlogReceiver = await startReceiver();
  const lags: number[] = [];
  const fresh = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const arrived = performance.timeOrigin + performance.now();
      const createdAt = (JSON.parse(Buffer.concat(chunks).toString()) as { created_at: string }).created_at;
      // µs in the text; Date.parse keeps ms: add the rest.
      const publishedMs = Date.parse(createdAt) + Number(`0.${createdAt.slice(23, 26)}`);
      lags.push(arrived - publishedMs);
      response.writeHead(204).end();
    });
  });
  fresh.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => fresh.listen(0, '127.0.0.1', resolve));
  const freshPort = (fresh.address() as AddressInfo).port;
  const destinations = { allowPrivate: true, allowHosts: [] };
  const nodeStores = Array.from({ length: nodeCount }, () => new PostgresStore(databaseUrl, { poolSize: 10 }));
  let deliverers: Deliverer[] = [];
  try {
    for (let i = 0; i < FAIR_ENDPOINTS; i += 1) {
      await createEndpoint(store, a.id, { url: `http://127.0.0.1:${backlogReceiver.port}/a${i}`, description: 'bench', enabledEvents: ['*'] }, box);
    }
    await createEndpoint(store, b.id, { url: `http://127.0.0.1:${freshPort}/b`, description: 'bench', enabledEvents: ['*'] }, box);
    log(`(efair, ${nodeCount} node${nodeCount > 1 ? 's' : ''}) importing ${FAIR_EVENTS} entities into ${A_UID}: ${FAIR_EVENTS * FAIR_ENDPOINTS} deliveries`);
    await importJsonl(store, A_UID, Readable.from(entityLines(FAIR_EVENTS)));
    await publishAllEvents(store, a.id, 5000);
    const [{ n: backlog } = { n: 0 }] = await store.query<{ n: number }>(`SELECT count(*)::int AS n FROM webhook_deliveries WHERE org_id = $1 AND state = 'pending'`, [a.id]);
    // A probe of the pending deliveries' index: counting 80,000 each time spaced B's events out.
    const drained = async () => (await store.query(`SELECT 1 FROM webhook_deliveries WHERE org_id = $1 AND state = 'pending' LIMIT 1`, [a.id])).length === 0;
    await vacuumWrittenTables(store);

    deliverers = nodeStores.map((nodeStore) => nodeDeliverer(nodeStore, { box, destinations, claimMs: 30_000 }, new Registry(), createLogger('warn'), renderDeliveredEvent)!);
    log(`(efair) ${nodeCount} deliverer(s) drain ${backlog} deliveries of A; B publishes an event every ${FRESH_EVERY_MS} ms meanwhile`);
    const started = performance.now();
    for (const deliverer of deliverers) deliverer.start();
    let published = 0;
    let drainedAt: number | undefined;
    while (drainedAt === undefined) {
      if (performance.now() - started > DRAIN_TIMEOUT_MS) throw new Error(`(efair) A's deliveries still pending after ${DRAIN_TIMEOUT_MS / 1000} s`);
      const next = performance.now() + FRESH_EVERY_MS;
      await importJsonl(store, B_UID, Readable.from(entityLines(1)));
      await publishAllEvents(store, b.id);
      deliverers[0]!.wake(b.id);
      published += 1;
      if (await drained()) drainedAt = performance.now();
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, next - performance.now())));
    }
    const until = performance.now() + 30_000;
    while (lags.length < published && performance.now() < until) await new Promise((resolve) => setTimeout(resolve, 50));
    if (lags.length < published) throw new Error(`(efair) ${published - lags.length} of B's ${published} events not delivered 30 s after A's backlog drained`);
    return { nodes: nodeCount, backlog, drainSeconds: (drainedAt - started) / 1000, lags };
  } finally {
    await Promise.all(deliverers.map((deliverer) => deliverer.stop()));
    await Promise.all(nodeStores.map((nodeStore) => nodeStore.close()));
    backlogReceiver.child.kill();
    fresh.closeAllConnections();
    await new Promise<void>((resolve) => fresh.close(() => resolve()));
  }
}
