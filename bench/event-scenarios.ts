/**
 * The event scenarios of issue 35 (docs/webhooks.md, docs/performance.md):
 *
 * - e1: drawdowns paced at 500/s over the `bench_writes` limits with one fast
 *   receiver subscribed to every event: commit-to-2xx lag (the client's 201
 *   to the receiver's POST, one clock: both run in this process) p50/p99,
 *   and a burst of drawdowns as fast as 32 connections go, for the node's
 *   deliveries per second. Targets: lag p50 ≤ 50 ms, p99 ≤ 500 ms,
 *   ≥ 1,000 deliveries/s. The paced runs follow WARMUP_SECONDS of the same
 *   writes, not measured.
 * - e2: the same paced writes with a black-holed endpoint (accepts TCP,
 *   never answers) beside the fast one: the fast one's lag p99 and the
 *   writes' p99 beside e1's.
 * - edeliver (bench/delivery-cost.ts): CPU per delivery of one deliverer draining
 *   a backlog, no writes beside it; run first, before the others' service starts.
 * - ecost: closed-loop drawdowns (32 connections, 10 s) with no endpoint and
 *   with one fast endpoint, alternated (2 rounds, or `--rounds N`, after an
 *   unmeasured one of 3 s each): the
 *   service's CPU per drawdown and its throughput, A/B in one invocation,
 *   and the database server's CPU beside them. Targets: ≤ 15% more CPU, ≤ 10% less throughput.
 *
 *   npm run bench -- --only e1,e2,ecost,edeliver   (DATABASE_URL=postgres://… or the local `lending_bench`)
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer as createTcpServer, type Socket } from 'node:net';
import { createApiKey } from '../src/auth/api-keys.js';
import type { KeyScope } from '../src/auth/key-scope.js';
import { findOrganization } from '../src/organizations/organizations.js';
import { migrate } from '../src/store/migrate.js';
import { deleteEndpoint as deleteWebhookEndpoint, listEndpoints, MAX_ENDPOINTS_PER_ORGANIZATION } from '../src/webhooks/webhook-endpoints.js';
import { PostgresStore } from '../src/store/postgres-store.js';
import { benchDatabaseUrl, vacuumWrittenTables } from './database.js';
import { publishBacklog } from './load.js';
import { deliveryCost, DELIVERIES_ORG_UID } from './delivery-cost.js';
import { databaseServerCpuSeconds } from './process-stats.js';
import { writeBenchRecord, type MeasuredRow } from './results-record.js';
import { percentile } from './burst-client.js';
import { startService, type RunningService } from './service.js';
import { ensureWriteLimits, SPREAD_LIMITS, WRITES_ORG_UID } from './write-scenarios.js';

export const EVENT_SCENARIO_IDS = ['e1', 'e2', 'ecost', 'edeliver'] as const;

const PACED_PER_SECOND = 500;
const PACED_SECONDS = 20;
const WARMUP_SECONDS = 5;
const BURST_WRITES = 6000;
const BURST_CONNECTIONS = 32;
const COST_SECONDS = 10;
const COST_ROUNDS = 2;
const COST_WARMUP_SECONDS = 3;
/** ecost's target: at most 15% more service CPU per drawdown with an endpoint. */
const COST_CPU_TARGET = 0.15;
/** After the last write, how long the receiver may stay silent before its count is final. */
const SETTLE_MS = 3000;

interface Keys {
  readonly write: string;
  readonly webhooks: string;
}

interface Received {
  readonly idempotencyKey: string | null;
  readonly at: number;
}

interface Receiver {
  readonly url: string;
  readonly received: Received[];
  close(): Promise<void>;
}

interface PacedRun {
  /** Idempotency-Key → when its 201 arrived (ms since the epoch, sub-millisecond). */
  readonly answeredAt: Map<string, number>;
  readonly writeMs: number[];
  readonly failures: number;
  /** Each status other than 201 and how often it came (0: no answer). */
  readonly failedStatuses: ReadonlyMap<number, number>;
}

/** Adds a scenario's figures to the run's record (bench/results/): lags and write latencies as p50/p99, rates as per second. */
type RecordRow = (id: string, title: string, connections: number, figures: { perSecond: number; p50?: number; p99?: number; failures?: number; cpuUs?: number }) => void;

export interface EventScenarioOptions {
  readonly logLevel: string;
  /** Where the service's CPU profile goes (`node --cpu-prof`), if anywhere. */
  readonly profileDir?: string | undefined;
  /** ecost's alternated rounds (at least COST_ROUNDS). */
  readonly rounds: number;
}

export async function runEventScenarios(wanted: readonly string[], log: (line: string) => void, { logLevel, profileDir, rounds }: EventScenarioOptions): Promise<string[]> {
  const databaseUrl = await benchDatabaseUrl();
  const keys = await prepare(databaseUrl, log);
  // Each measurement starts without the dead rows of the ones before it (bench/database.ts).
  // Also edeliver's store: its deliverer's pool, as large as a service's.
  const vacuumStore = new PostgresStore(databaseUrl, { poolSize: 10 });
  const vacuum = async () => {
    log('VACUUM of the tables the writes grow');
    await vacuumWrittenTables(vacuumStore);
  };
  const lines: string[] = [];
  /** The run's figures for its record (bench/results/): lags and write latencies as p50/p99, rates as per second. */
  const rows: MeasuredRow[] = [];
  const row: RecordRow = (id, title, connections, figures) =>
    rows.push({ id, title, connections, service: { p50: NaN, p99: NaN, failures: 0, ...figures } });
  try {
    // First, in a harness that has run nothing yet, and before any service: its deliverer would take these
    // deliveries (and could not sign them).
    if (wanted.includes('edeliver')) {
      const cost = await deliveryCost(vacuumStore, log);
      row('edeliver', `CPU per webhook delivery, ${cost.deliveries} drained by one deliverer, no writes`, 0, { perSecond: cost.perSecond, cpuUs: cost.cpuUsPerDelivery });
      if (Number.isFinite(cost.postgresUsPerDelivery)) {
        row('edeliver-postgres', `PostgreSQL CPU per webhook delivery, ${cost.deliveries} drained by one deliverer`, 0, { perSecond: cost.perSecond, cpuUs: cost.postgresUsPerDelivery });
      }
      row('edeliver-http-client', "node's HTTP client alone, CPU per keep-alive POST to the same receiver, 16 at once", 16, { perSecond: NaN, cpuUs: cost.httpClientUsPerPost });
      lines.push(
        `(edeliver) ${cost.deliveries} deliveries: ${fmt(cost.cpuUsPerDelivery)} µs CPU each (claims and recordings included), ${cost.perSecond.toFixed(0)}/s; ` +
          `PostgreSQL ${fmt(cost.postgresUsPerDelivery)} µs each`,
        `(edeliver) node's HTTP client alone: ${fmt(cost.httpClientUsPerPost)} µs CPU per POST (the floor under any delivery)`,
      );
    }
    if (wanted.some((id) => id !== 'edeliver')) lines.push(...(await withService({ databaseUrl, logLevel, profileDir, rounds, wanted, keys, log, row, vacuum, vacuumStore })));
  } finally {
    await vacuumStore.close();
  }
  lines.push(`record of this run: ${await writeBenchRecord({ rows, database: 'PostgreSQL (DATABASE_URL or the local lending_bench)', peakRssMiB: { service: NaN, bare: NaN } })}`);
  return lines;
}

interface ServiceScenarios extends EventScenarioOptions {
  readonly databaseUrl: string;
  readonly wanted: readonly string[];
  readonly keys: Keys;
  log(line: string): void;
  readonly row: RecordRow;
  vacuum(): Promise<void>;
  readonly vacuumStore: PostgresStore;
}

/** e1, e2 and ecost, against one service started for them. */
async function withService({ databaseUrl, logLevel, profileDir, rounds, wanted, keys, log, row, vacuum, vacuumStore }: ServiceScenarios): Promise<string[]> {
  const service = await startService({
    DATABASE_URL: databaseUrl,
    RATE_LIMIT_PER_MINUTE: '0',
    WRITE_RATE_LIMIT_PER_MINUTE: '0',
    WEBHOOK_ALLOW_PRIVATE: '1',
    WEBHOOK_SECRET_KEY: randomBytes(32).toString('base64'),
    LOG_LEVEL: logLevel,
  }, { profileDir });
  const lines: string[] = [];
  try {
    let e1: { lagP99: number; writeP99: number } | undefined;
    if (wanted.includes('e1')) {
      const fast = await fastReceiver();
      const endpoint = await createEndpoint(service.url, keys, fast.url);
      try {
        await warmUp(service.url, keys, fast, log);
        await vacuum();
        log(`(e1) drawdowns paced at ${PACED_PER_SECOND}/s for ${PACED_SECONDS} s, one fast receiver`);
        const paced = await pacedWrites(service.url, keys, PACED_PER_SECOND, PACED_SECONDS);
        await settle(fast);
        const lag = lagsOf(paced, fast.received);
        e1 = { lagP99: percentile(lag, 99), writeP99: percentile(paced.writeMs, 99) };
        row('e1', 'commit-to-2xx lag, drawdowns paced at 500/s, one fast receiver', 0, { perSecond: lag.length / PACED_SECONDS, p50: percentile(lag, 50), p99: e1.lagP99 });
        row('e1-writes', 'drawdown latency, paced at 500/s, one fast receiver', 0, { perSecond: paced.answeredAt.size / PACED_SECONDS, p50: percentile(paced.writeMs, 50), p99: e1.writeP99, failures: paced.failures });
        lines.push(
          `(e1) ${paced.answeredAt.size} drawdowns (${notCreated(paced)}), write p50 ${fmt(percentile(paced.writeMs, 50))} ms p99 ${fmt(e1.writeP99)} ms; ` +
            `${lag.length} deliveries matched, commit-to-2xx lag p50 ${fmt(percentile(lag, 50))} ms p99 ${fmt(e1.lagP99)} ms ` +
            `(targets p50 ≤ 50 ms ${percentile(lag, 50) <= 50 ? '✓' : '✗'}, p99 ≤ 500 ms ${e1.lagP99 <= 500 ? '✓' : '✗'})`,
        );
        fast.received.length = 0;
        await vacuum();
        log(`(e1) ${BURST_WRITES} drawdowns from ${BURST_CONNECTIONS} connections, as fast as they go`);
        const burstStart = Date.now();
        await closedLoopWrites(service.url, keys, BURST_CONNECTIONS, { count: BURST_WRITES });
        await settle(fast);
        const times = fast.received.map((r) => r.at);
        const span = (Math.max(...times) - Math.min(...times)) / 1000;
        const rate = times.length / Math.max(span, 0.001);
        row('e1-burst', `deliveries per second, ${BURST_WRITES} drawdowns from ${BURST_CONNECTIONS} connections`, BURST_CONNECTIONS, { perSecond: rate });
        lines.push(
          `(e1) burst: ${times.length} deliveries in ${span.toFixed(1)} s after the first (${(times.length / ((Date.now() - burstStart - SETTLE_MS) / 1000)).toFixed(0)}/s over the whole burst): ` +
            `${rate.toFixed(0)} deliveries/s (target ≥ 1,000/s ${rate >= 1000 ? '✓' : '✗'})`,
        );
      } finally {
        await deleteEndpoint(service.url, keys, endpoint);
        await fast.close();
      }
    }
    if (wanted.includes('e2')) {
      const fast = await fastReceiver();
      const hole = await blackHole();
      const fastEndpoint = await createEndpoint(service.url, keys, fast.url);
      let holeEndpoint: string | undefined;
      try {
        await warmUp(service.url, keys, fast, log);
        // The hole from the measurement's start: its first attempts hold their sockets to the deadline.
        holeEndpoint = await createEndpoint(service.url, keys, hole.url);
        await vacuum();
        log(`(e2) drawdowns paced at ${PACED_PER_SECOND}/s for ${PACED_SECONDS} s, a fast receiver beside a black hole`);
        const paced = await pacedWrites(service.url, keys, PACED_PER_SECOND, PACED_SECONDS);
        await settle(fast);
        const lag = lagsOf(paced, fast.received);
        const lagP99 = percentile(lag, 99);
        const writeP99 = percentile(paced.writeMs, 99);
        row('e2', 'fast receiver lag beside a black hole, drawdowns paced at 500/s', 0, { perSecond: lag.length / PACED_SECONDS, p50: percentile(lag, 50), p99: lagP99 });
        row('e2-writes', 'drawdown latency beside a black-holed endpoint, paced at 500/s', 0, { perSecond: paced.answeredAt.size / PACED_SECONDS, p50: percentile(paced.writeMs, 50), p99: writeP99, failures: paced.failures });
        lines.push(
          `(e2) ${paced.answeredAt.size} drawdowns (${notCreated(paced)}), write p99 ${fmt(writeP99)} ms${e1 ? ` (e1 ${fmt(e1.writeP99)})` : ''}; ` +
            `fast receiver: ${lag.length} deliveries, lag p50 ${fmt(percentile(lag, 50))} ms p99 ${fmt(lagP99)} ms${e1 ? ` (e1 ${fmt(e1.lagP99)})` : ''}; ` +
            `black hole: ${hole.connections()} connection(s) opened, at most ${hole.mostOpen()} open at once`,
        );
      } finally {
        if (holeEndpoint) await deleteEndpoint(service.url, keys, holeEndpoint);
        await deleteEndpoint(service.url, keys, fastEndpoint);
        await hole.close();
        await fast.close();
      }
    }
    const serverCpuSeconds = () => databaseServerCpuSeconds(vacuumStore);
    if (wanted.includes('ecost')) lines.push(...(await costOfEvents(service, keys, { log, row, vacuum, serverCpuSeconds, rounds: Math.max(rounds, COST_ROUNDS) })));
  } finally {
    await service.stop();
  }
  return lines;
}

interface CostContext {
  log(line: string): void;
  readonly row: RecordRow;
  vacuum(): Promise<void>;
  /** The database server's CPU so far (NaN when it runs elsewhere). */
  serverCpuSeconds(): Promise<number>;
  readonly rounds: number;
}

/**
 * ecost: CPU per drawdown and throughput without and with an endpoint,
 * alternated `rounds` times; medians. The target is the service's CPU;
 * the database server's is shown beside it (the machine's other share).
 */
async function costOfEvents(service: RunningService, keys: Keys, { log, row, vacuum, serverCpuSeconds, rounds }: CostContext): Promise<string[]> {
  const runs: Record<'without' | 'with', { cpuMs: number; serverCpuMs: number; perSecond: number; deliveriesPerDrawdown: number }[]> = { without: [], with: [] };
  // Round 0 is not measured: a service just started compiles its hot paths during it (a median of two rounds
  // was the mean of a cold one and a warm one).
  for (let round = 0; round <= rounds; round += 1) {
    for (const variant of ['without', 'with'] as const) {
      const fast = variant === 'with' ? await fastReceiver() : undefined;
      const endpoint = fast ? await createEndpoint(service.url, keys, fast.url) : undefined;
      try {
        if (round === 0) {
          log(`(ecost) warm-up: ${BURST_CONNECTIONS} connections for ${COST_WARMUP_SECONDS} s, ${variant} an endpoint, not measured`);
          await closedLoopWrites(service.url, keys, BURST_CONNECTIONS, { seconds: COST_WARMUP_SECONDS });
          if (fast) await settle(fast);
          continue;
        }
        await vacuum();
        log(`(ecost) round ${round}: ${BURST_CONNECTIONS} connections for ${COST_SECONDS} s, ${variant} an endpoint`);
        const cpuBefore = await service.cpuSeconds();
        const serverBefore = await serverCpuSeconds();
        const done = await closedLoopWrites(service.url, keys, BURST_CONNECTIONS, { seconds: COST_SECONDS });
        if (fast) await settle(fast);
        // The deliveries belong to the drawdowns' cost: CPU is read once they are done.
        const cpuMs = ((await service.cpuSeconds()) - cpuBefore) * 1000;
        const serverCpuMs = ((await serverCpuSeconds()) - serverBefore) * 1000;
        const perDrawdown = Math.max(done, 1);
        const deliveriesPerDrawdown = (fast?.received.length ?? 0) / perDrawdown;
        runs[variant].push({ cpuMs: cpuMs / perDrawdown, serverCpuMs: serverCpuMs / perDrawdown, perSecond: done / COST_SECONDS, deliveriesPerDrawdown });
      } finally {
        if (endpoint) await deleteEndpoint(service.url, keys, endpoint);
        await fast?.close();
      }
    }
  }
  const median = (values: number[]) => percentile(values, 50);
  const cpuWithout = median(runs.without.map((r) => r.cpuMs));
  const cpuWith = median(runs.with.map((r) => r.cpuMs));
  const rateWithout = median(runs.without.map((r) => r.perSecond));
  const rateWith = median(runs.with.map((r) => r.perSecond));
  const serverWithout = median(runs.without.map((r) => r.serverCpuMs));
  const serverWith = median(runs.with.map((r) => r.serverCpuMs));
  const moreCpu = cpuWith / cpuWithout - 1;
  const lessRate = 1 - rateWith / rateWithout;
  const deliveriesPerDrawdown = median(runs.with.map((r) => r.deliveriesPerDrawdown));
  // What the CPU target leaves each delivery: compare with edeliver's figures (its HTTP client floor included).
  const budgetPerDelivery = (cpuWithout * 1000 * COST_CPU_TARGET) / deliveriesPerDrawdown;
  row('ecost-without', 'closed-loop drawdowns, no webhook endpoint', BURST_CONNECTIONS, { perSecond: rateWithout, cpuUs: cpuWithout * 1000 });
  row('ecost-with', 'closed-loop drawdowns, one fast webhook endpoint', BURST_CONNECTIONS, { perSecond: rateWith, cpuUs: cpuWith * 1000 });
  if (Number.isFinite(serverWithout) && Number.isFinite(serverWith)) {
    row('ecost-postgres-without', 'PostgreSQL CPU, closed-loop drawdowns, no webhook endpoint', BURST_CONNECTIONS, { perSecond: rateWithout, cpuUs: serverWithout * 1000 });
    row('ecost-postgres-with', 'PostgreSQL CPU, closed-loop drawdowns, one fast webhook endpoint', BURST_CONNECTIONS, { perSecond: rateWith, cpuUs: serverWith * 1000 });
  }
  return [
    `(ecost) without endpoints: ${fmt(cpuWithout * 1000)} µs CPU per drawdown, ${rateWithout.toFixed(0)} drawdowns/s; ` +
      `with one: ${fmt(cpuWith * 1000)} µs, ${rateWith.toFixed(0)}/s (medians of ${rounds} alternated rounds)`,
    `(ecost) PostgreSQL (all its processes): ${fmt(serverWithout * 1000)} µs CPU per drawdown without, ${fmt(serverWith * 1000)} µs with`,
    `(ecost) ${(moreCpu * 100).toFixed(1)}% more CPU (target ≤ 15% ${moreCpu <= COST_CPU_TARGET ? '✓' : '✗'}), ${(lessRate * 100).toFixed(1)}% less throughput (target ≤ 10% ${lessRate <= 0.1 ? '✓' : '✗'})`,
    `(ecost) ${deliveriesPerDrawdown.toFixed(2)} deliveries per drawdown: the CPU target leaves ${fmt(budgetPerDelivery)} µs of service CPU per delivery, ` +
      `${fmt((cpuWith - cpuWithout) * 1000 / deliveriesPerDrawdown)} µs spent`,
  ];
}

async function prepare(databaseUrl: string, log: (line: string) => void): Promise<Keys> {
  const store = new PostgresStore(databaseUrl, { poolSize: 2 });
  try {
    await migrate(store);
    // The node started next would otherwise publish the dataset's events during the first measurements.
    await publishBacklog(store, log);
    await ensureWriteLimits(store);
    await deleteLeftEndpoints(store, log);
    const key = async (scope: string) => (await createApiKey(store, WRITES_ORG_UID, undefined, scope as KeyScope)).key;
    return { write: basic(await key('write')), webhooks: basic(await key('webhooks')) };
  } finally {
    await store.close();
  }
}

/**
 * A run stopped before its `finally` (killed, or failed mid-scenario) leaves
 * its endpoint behind, sealed under that run's WEBHOOK_SECRET_KEY: every
 * later drawdown would add a delivery to it that this run's service cannot
 * sign, fails and retries beside the measured ones. They go first.
 */
async function deleteLeftEndpoints(store: PostgresStore, log: (line: string) => void): Promise<void> {
  for (const uid of [WRITES_ORG_UID, DELIVERIES_ORG_UID]) {
    const org = await findOrganization(store, uid);
    if (!org) continue;
    const { items } = await listEndpoints(store, org.id, 0, MAX_ENDPOINTS_PER_ORGANIZATION);
    for (const endpoint of items) await deleteWebhookEndpoint(store, org.id, endpoint.id);
    if (items.length > 0) log(`deleted ${items.length} webhook endpoint(s) of ${uid} an earlier run left behind`);
  }
}

async function createEndpoint(baseUrl: string, keys: Keys, url: string): Promise<string> {
  const response = await fetch(`${baseUrl}/api/webhook_endpoints/`, {
    method: 'POST',
    headers: { authorization: keys.webhooks, 'content-type': 'application/json', 'idempotency-key': randomUUID() },
    body: JSON.stringify({ url, enabled_events: ['*'], description: 'bench' }),
  });
  const body = (await response.json()) as { id?: string };
  if (response.status !== 201 || !body.id) throw new Error(`creating a webhook endpoint: ${response.status} ${JSON.stringify(body)}`);
  return body.id;
}

async function deleteEndpoint(baseUrl: string, keys: Keys, id: string): Promise<void> {
  await fetch(`${baseUrl}/api/webhook_endpoints/${id}/`, { method: 'DELETE', headers: { authorization: keys.webhooks, 'idempotency-key': randomUUID() } });
}

/**
 * The paced writes for WARMUP_SECONDS, not measured: a service just started
 * compiles its hot paths and opens its connections to the database and the
 * receiver while the first seconds' events wait (docs/performance.md).
 */
async function warmUp(baseUrl: string, keys: Keys, receiver: Receiver, log: (line: string) => void): Promise<void> {
  log(`warm-up: drawdowns paced at ${PACED_PER_SECOND}/s for ${WARMUP_SECONDS} s, not measured`);
  await pacedWrites(baseUrl, keys, PACED_PER_SECOND, WARMUP_SECONDS);
  await settle(receiver);
  receiver.received.length = 0;
}

/** `perSecond` drawdowns a second for `seconds`, each sent at its due time whatever the answers before it. */
async function pacedWrites(baseUrl: string, keys: Keys, perSecond: number, seconds: number): Promise<PacedRun> {
  const answeredAt = new Map<string, number>();
  const writeMs: number[] = [];
  const failedStatuses = new Map<number, number>();
  const start = performance.now();
  const total = perSecond * seconds;
  const pending: Promise<void>[] = [];
  for (let i = 0; i < total; i += 1) {
    const wait = start + (i * 1000) / perSecond - performance.now();
    if (wait > 1) await new Promise((resolve) => setTimeout(resolve, wait));
    const key = randomUUID();
    pending.push(
      drawdown(baseUrl, keys, i, key).then(({ status, ms }) => {
        if (status !== 201) failedStatuses.set(status, (failedStatuses.get(status) ?? 0) + 1);
        else answeredAt.set(key, performance.timeOrigin + performance.now());
        writeMs.push(ms);
      }),
    );
  }
  await Promise.all(pending);
  const failures = [...failedStatuses.values()].reduce((sum, count) => sum + count, 0);
  return { answeredAt, writeMs, failures, failedStatuses };
}

/** Drawdowns from `connections` loops, until `count` are answered or `seconds` pass; how many were 201. */
async function closedLoopWrites(baseUrl: string, keys: Keys, connections: number, until: { count?: number; seconds?: number }): Promise<number> {
  let sent = 0;
  let created = 0;
  const deadline = until.seconds === undefined ? Number.POSITIVE_INFINITY : performance.now() + until.seconds * 1000;
  const loop = async () => {
    while (performance.now() < deadline && (until.count === undefined || sent < until.count)) {
      sent += 1;
      if ((await drawdown(baseUrl, keys, sent, randomUUID())).status === 201) created += 1;
    }
  };
  await Promise.all(Array.from({ length: connections }, loop));
  return created;
}

async function drawdown(baseUrl: string, keys: Keys, i: number, key: string): Promise<{ status: number; ms: number }> {
  const sent = performance.now();
  try {
    const response = await fetch(`${baseUrl}/api/limits/cl_bench_w_${i % SPREAD_LIMITS}/drawdowns/`, {
      method: 'POST',
      headers: { authorization: keys.write, 'content-type': 'application/json', 'idempotency-key': key },
      body: '{"amount":"0.01"}',
    });
    await response.arrayBuffer();
    return { status: response.status, ms: performance.now() - sent };
  } catch {
    return { status: 0, ms: performance.now() - sent };
  }
}

/** `3 not 201: 503 ×2, 0 ×1` (0: no answer), or `0 not 201`. */
function notCreated(paced: PacedRun): string {
  const statuses = [...paced.failedStatuses].map(([status, count]) => `${status} ×${count}`).join(', ');
  return `${paced.failures} not 201${statuses ? `: ${statuses}` : ''}`;
}

/** For each delivered event of a paced write: its arrival minus the write's 201. */
function lagsOf(paced: PacedRun, received: readonly Received[]): number[] {
  const lags: number[] = [];
  for (const delivery of received) {
    const answered = delivery.idempotencyKey === null ? undefined : paced.answeredAt.get(delivery.idempotencyKey);
    if (answered !== undefined) lags.push(Math.max(0, delivery.at - answered));
  }
  return lags;
}

/** Waits until the receiver has heard nothing for SETTLE_MS. */
async function settle(receiver: Receiver): Promise<void> {
  let seen = -1;
  while (seen !== receiver.received.length) {
    seen = receiver.received.length;
    await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
  }
}

async function fastReceiver(): Promise<Receiver> {
  const received: Received[] = [];
  const server = createHttpServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const at = performance.timeOrigin + performance.now();
      let idempotencyKey: string | null = null;
      try {
        idempotencyKey = (JSON.parse(Buffer.concat(chunks).toString()) as { idempotency_key?: string | null }).idempotency_key ?? null;
      } catch {
        // Counted, unmatched.
      }
      received.push({ idempotencyKey, at });
      response.writeHead(204).end();
    });
  });
  return { url: `http://127.0.0.1:${await listen(server)}/hooks`, received, close: () => closeServer(server) };
}

async function blackHole(): Promise<{ url: string; connections(): number; mostOpen(): number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  let opened = 0;
  let most = 0;
  const server = createTcpServer((socket) => {
    opened += 1;
    sockets.add(socket);
    most = Math.max(most, sockets.size);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => sockets.delete(socket));
    socket.resume();
  });
  const port = await listen(server as unknown as Server);
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    connections: () => opened,
    mostOpen: () => most,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

async function listen(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (typeof address !== 'object' || address === null) throw new Error('the receiver has no port');
  return address.port;
}

async function closeServer(server: Server): Promise<void> {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

function basic(key: string): string {
  return `Basic ${Buffer.from(`${WRITES_ORG_UID}:${key}`).toString('base64')}`;
}

function fmt(ms: number): string {
  return ms.toFixed(1);
}
