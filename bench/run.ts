/**
 * `npm run bench`: loads a seeded synthetic dataset into PostgreSQL through
 * the import path, starts `lending-api serve` (the compiled production entry,
 * `dist/cli/run.js`) as a child process with rate limiting off, and beside it
 * a bare Fastify handler running the same list-engine call
 * (`bench/bare-server.ts`), drives both over HTTP and reports per scenario and
 * connection count: req/s, latency, and each process's CPU time per request
 * (user + system from /proc/<pid>/stat around the measured load, divided by
 * the requests answered) with the ratio service/bare; then the database
 * ceiling (the same SQL through node-postgres, no HTTP) and the embedded
 * store: 100k records in PGlite. Then the write scenarios (w1, w2):
 * drawdowns over HTTP on an organization of their own (`bench/write-scenarios.ts`
 * says what they leave in the database); then the bursts, the flood and, last,
 * the event and webhook scenarios.
 *
 *   npm run bench -- [--scale 1] [--seed 42] [--seconds 10] [--warmup 2] [--connections 16,32] [--only a,c,w1]
 *                    [--rounds 1] [--no-pglite] [--no-ceiling] [--no-bare] [--profile DIR] [--log-level warn]
 *                    [--load-generator auto|wrk|autocannon] [--note 'beside stress-ng --cpu 1']
 *
 * CPU per request is what belongs to the service alone on a shared machine:
 * req/s and latency move with whatever else runs, CPU time per request much
 * less. `--rounds N` measures each read row's service and bare handler N
 * times (ecost: without and with an endpoint, at least 2), alternately, and reports each figure's median (requests and
 * failures summed): on a machine whose speed drifts from minute to minute, a
 * single service run followed by a single bare run can land on either side
 * of the drift, and their ratio with it. `--profile DIR` starts both processes with `node --cpu-prof` and
 * leaves their profiles in DIR/service and DIR/bare (summarize one with
 * `node --import tsx bench/profile-summary.ts FILE`).
 *
 * The HTTP load comes from wrk when it is on PATH (`apt-get install wrk`),
 * else from autocannon in this process; `--load-generator` forces one. wrk
 * takes about 15 µs of CPU per request, autocannon about 50 µs, on the same
 * cores as the service and PostgreSQL. The table's first line names the one used.
 *
 * `--only e1,e2,ecost,edeliver` runs the event and webhook scenarios alone
 * (`bench/event-scenarios.ts`); `--only efair` organizations' turns at
 * delivery beside an 80,000-delivery backlog (`bench/fair-scenario.ts`);
 * `--only estream` the event stream's catch-up, live lag and idle streams' memory
 * (`bench/stream-scenario.ts`); `--only eprune` (never in a full run: it
 * loads 20 million events into a database of its own, EPRUNE_EVENTS to
 * change it) the drop of a day's partitions against the DELETE pruning
 * (`bench/prune-scenario.ts`); `--only portal` the portal's bundle size and time to its first interactive
 * page on the demo, in Chromium (`bench/portal-scenario.ts`).
 *
 * `--only w1,w2` runs only the writes (add `--no-pglite --no-bare` to skip
 * the rest too). The bursts w3–w6 (`bench/burst-scenarios.ts`) run on a
 * PostgreSQL the harness starts for itself; `--only w3,w4,w5,w6` runs them
 * alone (no dataset, no read scenarios, no PGlite).
 *
 * Each run that measures reads or writes also writes its figures, command,
 * commit and machine to bench/results/<timestamp>-<commit>.json
 * (bench/results-record.ts); `npm run bench:chart` draws their trend.
 *
 * DATABASE_URL (postgres://…) selects the database; by default the harness
 * creates and uses `lending_bench` on the local server.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { createApiKey } from '../src/auth/api-keys.js';
import { requireOrganization } from '../src/organizations/organizations.js';
import { DEFAULT_LIST_CACHE, ListCache } from '../src/listing/list-cache.js';
import { listRecords } from '../src/listing/list-records.js';
import { parseListQuery } from '../src/listing/query-parser.js';
import { RESOURCES } from '../src/resources/index.js';
import { PgliteStore } from '../src/store/pglite-store.js';
import { PostgresStore } from '../src/store/postgres-store.js';
import type { Store } from '../src/store/store.js';
import { organizations, type DatasetSpec, type OrganizationShape } from './dataset.js';
import { benchDatabaseUrl, vacuumWrittenTables } from './database.js';
import { readCpuTimes, stolenShare } from './host-load.js';
import { ensureDataset } from './load.js';
import { chooseLoadGenerator, driveDirect, type LoadGenerator, type LoadGeneratorChoice, type Measurement } from './measure.js';
import { scenarios, type Scenario } from './scenarios.js';
import { DRAWDOWN_BODY, ensureWriteLimits, WRITES_ORG_UID, writeScenarios } from './write-scenarios.js';
import { startBareServer, startService, type RunningService } from './service.js';
import { BURST_SCENARIO_IDS, printBurstResults, runBurstScenarios } from './burst-scenarios.js';
import { writeBenchRecord } from './results-record.js';
import { FLOOD_SCENARIO_IDS, floodRecordRow, printFloodResult, runFloodScenario, type FloodScenarioId } from './flood-scenario.js';
import { EVENT_SCENARIO_IDS, runEventScenarios } from './event-scenarios.js';
import { FAIR_SCENARIO_ID, runFairScenario } from './fair-scenario.js';
import { runStreamScenario, STREAM_SCENARIO_ID } from './stream-scenario.js';
import { FLOOR_SCENARIO_ID, runWriteFloor } from './write-floor.js';
import { PRUNE_SCENARIO_ID, runPruneScenario } from './prune-scenario.js';
import { PORTAL_SCENARIO_ID, runPortalScenario } from './portal-scenario.js';

const { values: args } = parseArgs({
  options: {
    scale: { type: 'string', default: '1' },
    seed: { type: 'string', default: '42' },
    seconds: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '2' },
    rounds: { type: 'string', default: '1' },
    connections: { type: 'string', default: '16,32' },
    only: { type: 'string' },
    before: { type: 'string', default: '7f6599e' },
    'floor-parts': { type: 'string', default: 'now,before,tpcb' },
    'pool-size': { type: 'string', default: '10' },
    'log-level': { type: 'string', default: 'warn' },
    'no-pglite': { type: 'boolean', default: false },
    'no-ceiling': { type: 'boolean', default: false },
    'no-bare': { type: 'boolean', default: false },
    'load-only': { type: 'boolean', default: false },
    'pglite-records': { type: 'string', default: '100000' },
    'load-generator': { type: 'string', default: 'auto' },
    profile: { type: 'string' },
    note: { type: 'string' },
  },
});

const spec: DatasetSpec = { seed: Number(args.seed), scale: Number(args.scale) };
const seconds = Number(args.seconds);
const warmup = Number(args.warmup);
const rounds = Number(args.rounds);
if (!Number.isInteger(rounds) || rounds < 1) throw new Error(`--rounds takes a whole number of at least 1, not ${args.rounds}`);
const connectionCounts = args.connections.split(',').map(Number);
if (connectionCounts.some((n) => !Number.isInteger(n) || n < 1)) throw new Error(`--connections takes whole numbers, e.g. 16,32, not ${args.connections}`);
const poolSize = Number(args['pool-size']);
const profileDir = args.profile ? path.resolve(args.profile) : undefined;
const LOAD_GENERATORS: readonly LoadGeneratorChoice[] = ['auto', 'wrk', 'autocannon'];
const loadGeneratorChoice = LOAD_GENERATORS.find((name) => name === args['load-generator']);
if (!loadGeneratorChoice) throw new Error(`--load-generator must be one of ${LOAD_GENERATORS.join(', ')}, not ${args['load-generator']}`);
const log = (line: string) => process.stderr.write(`bench: ${line}\n`);

/** CPU per request, µs, for the entity lookups and page 1 (issue 16). */
const CPU_TARGET_US = 130;
/** The service's CPU per request against the bare handler's, every PostgreSQL scenario. */
const BARE_RATIO_TARGET = 1.3;
const PEAK_RSS_TARGET_MIB = 200;
const CPU_TARGETED = new Set(['a', 'b', 'c']);

/** A measurement over HTTP with the CPU time the serving process used for it. */
interface ProcessMeasurement extends Measurement {
  /** The serving process's CPU time (user + system) per request answered, µs. */
  readonly cpuUs: number;
}

interface Row {
  readonly id: string;
  readonly title: string;
  readonly connections: number;
  readonly service: ProcessMeasurement;
  readonly bare?: ProcessMeasurement | undefined;
  readonly ceiling?: Measurement | undefined;
  /** Each target with whether it was met. */
  readonly targets: readonly (readonly [string, boolean])[];
}

const LATENCY_TARGETS: Record<string, (service: Measurement) => [string, boolean]> = {
  a: (s) => ['p99 < 15 ms', s.p99 < 15],
  b: (s) => ['p99 < 15 ms', s.p99 < 15],
  c: (s) => ['p50 < 10 ms', s.p50 < 10],
  d: (s) => ['p50 < 50 ms', s.p50 < 50],
  e: (s) => ['p50 < 20 ms', s.p50 < 20],
  f: (s) => ['p50 < 20 ms', s.p50 < 20],
  pglite: (s) => ['p50 < 5 ms', s.p50 < 5],
  w1: (s) => ['p99 < 25 ms', s.p99 < 25],
};

/** Issue 15: drawdowns per second, and which failures are the correct ones (none: no limit can run out). */
const WRITE_TARGETS: Record<string, (service: Measurement) => [string, boolean][]> = {
  w1: (s) => [
    ['≥ 2,000/s', s.perSecond >= 2000],
    ['no errors', s.failures === 0],
  ],
  w2: (s) => [
    ['≥ 500/s', s.perSecond >= 500],
    ['no error but 409', Object.keys(s.failuresByStatus ?? {}).every((status) => status === '409')],
  ],
};

function targetsOf(id: string, service: ProcessMeasurement, bare?: ProcessMeasurement): [string, boolean][] {
  const targets: [string, boolean][] = [];
  if (CPU_TARGETED.has(id)) targets.push([`CPU ≤ ${CPU_TARGET_US} µs`, service.cpuUs <= CPU_TARGET_US]);
  if (bare) targets.push([`≤ ${BARE_RATIO_TARGET}× bare`, service.cpuUs / bare.cpuUs <= BARE_RATIO_TARGET]);
  const latency = LATENCY_TARGETS[id];
  if (latency) targets.push(latency(service));
  targets.push(...(WRITE_TARGETS[id]?.(service) ?? []));
  return targets;
}

interface PeakRss {
  service: number;
  bare: number;
}

async function main(): Promise<void> {
  const wanted = args.only?.split(',');
  if (wanted?.length === 1 && wanted[0] === FAIR_SCENARIO_ID) {
    process.stdout.write(`${(await runFairScenario(log)).join('\n')}\n`);
    return;
  }
  if (wanted?.length === 1 && wanted[0] === FLOOR_SCENARIO_ID) {
    const floor = { seconds: Number(args.seconds), rounds, before: args.before, logLevel: args['log-level'], parts: args['floor-parts'].split(',') };
    process.stdout.write(`${(await runWriteFloor(floor, log)).join('\n')}\n`);
    return;
  }
  // Only when asked for: it loads 20 million events into a database of its own (bench/prune-scenario.ts).
  if (wanted?.length === 1 && wanted[0] === PRUNE_SCENARIO_ID) {
    process.stdout.write(`${(await runPruneScenario(log)).join('\n')}\n`);
    return;
  }
  if (wanted?.length === 1 && wanted[0] === STREAM_SCENARIO_ID) {
    process.stdout.write(`${(await runStreamScenario(log, args['log-level'])).join('\n')}\n`);
    return;
  }
  if (wanted?.length === 1 && wanted[0] === PORTAL_SCENARIO_ID) {
    process.stdout.write(`${(await runPortalScenario(log)).join('\n')}\n`);
    return;
  }
  const isFlood = (id: string): id is FloodScenarioId => (FLOOD_SCENARIO_IDS as readonly string[]).includes(id);
  if (wanted?.every(isFlood)) return floods(wanted);
  const isEvents = (id: string) => (EVENT_SCENARIO_IDS as readonly string[]).includes(id);
  const events = async (ids: readonly string[]) => {
    const options = { logLevel: args['log-level'], profileDir: profileDir && path.join(profileDir, 'service'), rounds };
    process.stdout.write(`${(await runEventScenarios(ids, log, options)).join('\n')}\n`);
  };
  if (wanted?.every(isEvents)) return events(wanted);
  const isBurst = (id: string) => (BURST_SCENARIO_IDS as readonly string[]).includes(id);
  if (wanted?.every(isBurst)) {
    const bursts = await runBurstScenarios(wanted, log, args['log-level']);
    process.stdout.write(`Node ${process.version}, service LOG_LEVEL=${args['log-level']}.\n${printBurstResults(bursts).join('\n')}\n`);
    return;
  }
  await readsAndWrites();
  if (args['load-only']) return;
  const bursts = await runBurstScenarios(wanted?.filter(isBurst) ?? BURST_SCENARIO_IDS, log, args['log-level']);
  process.stdout.write(`${printBurstResults(bursts).join('\n')}\n`);
  await floods(wanted?.filter(isFlood) ?? FLOOD_SCENARIO_IDS);
  const eventIds = wanted?.filter(isEvents) ?? EVENT_SCENARIO_IDS;
  if (eventIds.length > 0) await events(eventIds);
  if (!wanted || wanted.includes(FAIR_SCENARIO_ID)) process.stdout.write(`${(await runFairScenario(log)).join('\n')}\n`);
  if (!wanted || wanted.includes(STREAM_SCENARIO_ID)) process.stdout.write(`${(await runStreamScenario(log, args['log-level'])).join('\n')}\n`);
  if (!wanted || wanted.includes(PORTAL_SCENARIO_ID)) process.stdout.write(`${(await runPortalScenario(log)).join('\n')}\n`);
}

/** The flood scenarios, each printed as it ends; their record in bench/results/ (the reads' and writes' runs write their own). */
async function floods(ids: readonly FloodScenarioId[]): Promise<void> {
  if (ids.length === 0) return;
  const results = [];
  for (const id of ids) {
    const result = await runFloodScenario(id, log, args['log-level'], profileDir && path.join(profileDir, id));
    process.stdout.write(`${printFloodResult(result).join('\n')}\n`);
    results.push(result);
  }
  log(`record of the flood: ${await writeBenchRecord({ rows: results.map(floodRecordRow), database: 'PostgreSQL', note: args.note })}`);
}

async function readsAndWrites(): Promise<void> {
  const rows: Row[] = [];
  const generator = await chooseLoadGenerator(loadGeneratorChoice);
  log(`load generator: ${generator.description}`);
  const databaseUrl = await benchDatabaseUrl();
  const store = new PostgresStore(databaseUrl, { poolSize, connectionTimeoutMs: 30_000 });
  const peakRss: PeakRss = { service: NaN, bare: NaN };
  let stolen: number | undefined;
  let settings = '';
  try {
    const loaded = await ensureDataset(store, spec, {
      log,
      reset: async () => {
        log(`loading the dataset (seed ${spec.seed}, scale ${spec.scale}) into ${store.description}`);
        await resetBenchDatabase(store);
      },
    });
    log(loaded.reused ? 'reusing the loaded dataset' : `dataset loaded in ${loaded.seconds.toFixed(0)} s`);
    if (args['load-only']) return;
    const [largest] = organizations(spec) as [OrganizationShape];
    const org = await requireOrganization(store, largest.uid);
    const service = await startService(
      { DATABASE_URL: databaseUrl, RATE_LIMIT_PER_MINUTE: '0', WRITE_RATE_LIMIT_PER_MINUTE: '0', LOG_LEVEL: args['log-level'], DATABASE_POOL_SIZE: String(poolSize) },
      { profileDir: profileDir && path.join(profileDir, 'service') },
    );
    const bare = args['no-bare'] ? undefined : await startBareServer(databaseUrl, org.id, poolSize, { profileDir: profileDir && path.join(profileDir, 'bare') });
    const [server] = await store.query<{ version: string; shared_buffers: string }>(
      `SELECT current_setting('server_version') AS version, current_setting('shared_buffers') AS shared_buffers`,
    );
    settings = `PostgreSQL ${server?.version}, shared_buffers ${server?.shared_buffers}`;
    try {
      const before = await readCpuTimes();
      rows.push(...(await runScenarios(store, service, bare, largest, org.id, generator)));
      stolen = stolenShare(before, await readCpuTimes());
      peakRss.service = await service.peakRssMiB();
      if (bare) peakRss.bare = await bare.peakRssMiB();
    } finally {
      await service.stop();
      await bare?.stop();
    }
  } finally {
    await store.close();
  }
  if (args['load-only']) return;
  if (!args['no-pglite']) rows.push(...(await runPglite(generator)));
  printTable(rows, peakRss, settings, stolen, generator);
  log(`record of this run: ${await writeBenchRecord({ rows, database: settings, peakRssMiB: peakRss, note: args.note })}`);
}

async function runScenarios(
  store: PostgresStore,
  service: RunningService,
  bare: RunningService | undefined,
  largest: OrganizationShape,
  orgId: string,
  generator: LoadGenerator,
): Promise<Row[]> {
  const key = await createApiKey(store, largest.uid);
  const authorization = `Basic ${Buffer.from(`${largest.uid}:${key.key}`).toString('base64')}`;
  const wanted = args.only?.split(',');
  const rows: Row[] = [];
  try {
    for (const scenario of scenarios(spec, largest)) {
      if (wanted && !wanted.includes(scenario.id)) continue;
      for (const connections of connectionCounts) {
        const load = (target: RunningService, headers: Record<string, string>) =>
          measureProcess(target, (secs) =>
            generator.drive({ url: target.url, headers, nextPath: () => `/api/${scenario.path}/?${scenario.nextQuery()}`, connections, seconds: secs }),
          );
        const services: ProcessMeasurement[] = [];
        const bares: ProcessMeasurement[] = [];
        for (let round = 1; round <= rounds; round += 1) {
          const of = rounds > 1 ? ` (round ${round} of ${rounds})` : '';
          log(`(${scenario.id}) ${scenario.title}, ${connections} connections: service${of}`);
          services.push(await load(service, { authorization }));
          if (bare) {
            log(`(${scenario.id}) ${scenario.title}, ${connections} connections: bare handler${of}`);
            bares.push(await load(bare, {}));
          }
        }
        const measured = medianOf(services);
        const bareMeasured = bare ? medianOf(bares) : undefined;
        let ceiling: Measurement | undefined;
        if (!args['no-ceiling']) {
          log(`(${scenario.id}) ${scenario.title}, ${connections} connections: database ceiling`);
          ceiling = await measureCeiling(store, orgId, scenario, connections);
        }
        rows.push({
          id: scenario.id,
          title: scenario.title,
          connections,
          service: measured,
          bare: bareMeasured,
          ceiling,
          targets: targetsOf(scenario.id, measured, bareMeasured),
        });
      }
    }
  } finally {
    await store.query('UPDATE api_keys SET revoked_at = now() WHERE id = $1', [key.id]);
  }
  rows.push(...(await runWriteScenarios(store, service, generator, wanted)));
  return rows;
}

/** Drawdowns over HTTP, after the reads (so they read tables the writes have not grown in this run). */
async function runWriteScenarios(store: PostgresStore, service: RunningService, generator: LoadGenerator, wanted: string[] | undefined): Promise<Row[]> {
  const chosen = writeScenarios(spec).filter((scenario) => !wanted || wanted.includes(scenario.id));
  if (chosen.length === 0) return [];
  await ensureWriteLimits(store);
  const key = await createApiKey(store, WRITES_ORG_UID, undefined, 'write');
  const authorization = `Basic ${Buffer.from(`${WRITES_ORG_UID}:${key.key}`).toString('base64')}`;
  const rows: Row[] = [];
  try {
    for (const scenario of chosen) {
      for (const connections of connectionCounts) {
        log('VACUUM of the tables the writes grow');
        await vacuumWrittenTables(store);
        log(`(${scenario.id}) ${scenario.title}, ${connections} connections: service`);
        const measured = await measureProcess(service, (secs) =>
          generator.drive({ url: service.url, headers: { authorization }, nextPath: scenario.nextPath, connections, seconds: secs, postBody: scenario.postBody ?? DRAWDOWN_BODY }),
        );
        rows.push({ id: scenario.id, title: scenario.title, connections, service: measured, targets: targetsOf(scenario.id, measured) });
      }
    }
  } finally {
    await store.query('UPDATE api_keys SET revoked_at = now() WHERE id = $1', [key.id]);
  }
  return rows;
}

/** Each figure's median over the rounds of one row; requests and failures summed. */
function medianOf(measurements: readonly ProcessMeasurement[]): ProcessMeasurement {
  const median = (pick: (m: ProcessMeasurement) => number) => {
    const sorted = measurements.map(pick).sort((a, b) => a - b);
    const middle = Math.floor(sorted.length / 2);
    return sorted.length % 2 === 1 ? (sorted[middle] ?? NaN) : ((sorted[middle - 1] ?? NaN) + (sorted[middle] ?? NaN)) / 2;
  };
  const sum = (pick: (m: ProcessMeasurement) => number) => measurements.reduce((total, m) => total + pick(m), 0);
  return {
    requests: sum((m) => m.requests),
    failures: sum((m) => m.failures),
    perSecond: median((m) => m.perSecond),
    p50: median((m) => m.p50),
    p99: median((m) => m.p99),
    cpuUs: median((m) => m.cpuUs),
  };
}

/** Warm-up, then the measured load with the serving process's CPU time read just before and just after it. */
async function measureProcess(target: RunningService, drive: (seconds: number) => Promise<Measurement>): Promise<ProcessMeasurement> {
  await drive(warmup);
  const before = await target.cpuSeconds();
  const measured = await drive(seconds);
  const used = (await target.cpuSeconds()) - before;
  const answered = measured.requests + measured.failures;
  return { ...measured, cpuUs: answered === 0 ? NaN : (used * 1e6) / answered };
}

/** The same SQL the service issues for each request (the list engine's), straight through the driver. */
async function measureCeiling(store: Store, orgId: string, scenario: Scenario, connections: number): Promise<Measurement> {
  const resource = RESOURCES.find((candidate) => candidate.path === scenario.path);
  if (!resource) throw new Error(`no resource ${scenario.path}`);
  // The service's statements, including those it saves by remembering counts and anchors per table version.
  const cache = new ListCache(DEFAULT_LIST_CACHE);
  const operation = () => listRecords(store, resource, orgId, parseListQuery(resource, scenario.nextQuery()), cache);
  await driveDirect(operation, connections, warmup);
  return driveDirect(operation, connections, seconds);
}

/** The embedded store: a PGlite directory holding one organization of 100k payment methods, scenario (a). */
async function runPglite(generator: LoadGenerator): Promise<Row[]> {
  const records = Number(args['pglite-records']);
  const dir = await mkdtemp(path.join(tmpdir(), 'lending-bench-pglite-'));
  const org: OrganizationShape = {
    index: 0,
    uid: 'bench_org_000',
    paymentMethods: records,
    creditLimits: 0,
    entities: Math.ceil(records / 5),
  };
  try {
    const pglite = await PgliteStore.open(dir);
    let authorization: string;
    try {
      log(`PGlite: importing ${records.toLocaleString('en-US')} payment methods into ${dir}`);
      await ensureDataset(pglite, spec, { log, reset: async () => {}, only: [org] });
      const key = await createApiKey(pglite, org.uid);
      authorization = `Basic ${Buffer.from(`${org.uid}:${key.key}`).toString('base64')}`;
    } finally {
      await pglite.close();
    }
    const service = await startService({ DATABASE_URL: `pglite://${dir}`, RATE_LIMIT_PER_MINUTE: '0', LOG_LEVEL: args['log-level'] });
    const connections = Math.max(...connectionCounts);
    try {
      const scenario = scenarios(spec, org)[0] as Scenario;
      const rows: Row[] = [];
      // PGlite runs one query at a time, so latency at N connections is about
      // N times the single-client figure: both are reported.
      for (const clients of [1, connections]) {
        log(`PGlite (a) ${scenario.title}, ${clients} connection(s): service`);
        const measured = await measureProcess(service, (secs) =>
          generator.drive({
            url: service.url,
            headers: { authorization },
            nextPath: () => `/api/methods/?${scenario.nextQuery()}`,
            connections: clients,
            seconds: secs,
          }),
        );
        rows.push({
          id: 'a',
          title: `PGlite, ${records.toLocaleString('en-US')} records: ${scenario.title}`,
          connections: clients,
          service: measured,
          targets: clients === 1 ? [(LATENCY_TARGETS.pglite as (s: Measurement) => [string, boolean])(measured)] : [],
        });
      }
      return rows;
    } finally {
      await service.stop();
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Empties the database, refusing unless it is the harness's own, holds an earlier bench dataset, or holds no tables. */
async function resetBenchDatabase(store: Store): Promise<void> {
  const [info] = await store.query<{ name: string; tables: string; bench: boolean }>(
    `SELECT current_database() AS name, (SELECT count(*)::text FROM pg_tables WHERE schemaname = 'public') AS tables,
            to_regclass('public.bench_dataset') IS NOT NULL AS bench`,
  );
  if (info?.name !== 'lending_bench' && info?.tables !== '0' && !info?.bench) {
    throw new Error(`database ${info?.name} holds other data; point DATABASE_URL at an empty database or unset it to use lending_bench`);
  }
  await store.exec('DROP SCHEMA public CASCADE; CREATE SCHEMA public');
}

function printTable(rows: readonly Row[], peakRss: PeakRss, settings: string, stolen: number | undefined, generator: LoadGenerator): void {
  const ms = (value: number | undefined) => (value !== undefined && Number.isFinite(value) ? value.toFixed(1) : '—');
  const us = (value: number | undefined) => (value !== undefined && Number.isFinite(value) ? value.toFixed(0) : '—');
  const rate = (value: number | undefined) => (value !== undefined && Number.isFinite(value) ? value.toFixed(0) : '—');
  const mib = (value: number) => (Number.isFinite(value) ? `${value.toFixed(0)} MiB` : '—');
  const lines = [
    `Scale ${spec.scale} (seed ${spec.seed}), ${seconds} s per measurement after ${warmup} s of warm-up${rounds > 1 ? `, reads: ${rounds} rounds of service and bare handler in turn, medians` : ''}, load generator ${generator.description}, service LOG_LEVEL=${args['log-level']}, Node ${process.version}, ${settings}.`,
    `CPU µs/req: the serving process's user + system CPU time during the measured load (/proc/<pid>/stat) per request answered. Bare: a Fastify handler running the same list-engine call with no auth, hooks, logging or metrics (bench/bare-server.ts).`,
    `Writes (w…): POST drawdowns of 1.00, each with a fresh Idempotency-Key, on the organization ${WRITES_ORG_UID} (limits no run can spend); (l1) creates loans of 1.00 on w2's limit instead (the loan, its drawdown entry, the limit moved); failures are counted by status.`,
    '',
    '| scenario | conns | service req/s | p50 ms | p99 ms | service CPU µs/req | bare req/s | bare CPU µs/req | service/bare | ceiling req/s | targets | met |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|',
    ...rows.map((row) => {
      const byStatus = Object.entries(row.service.failuresByStatus ?? {}).map(([status, n]) => `${status}×${n}`);
      const failures = row.service.failures > 0 ? ` (${row.service.failures} failed${byStatus.length > 0 ? `: ${byStatus.join(', ')}` : ''})` : '';
      const ratio = row.bare ? `${(row.service.cpuUs / row.bare.cpuUs).toFixed(2)}×` : '—';
      const targets = row.targets.length === 0 ? '—' : row.targets.map(([label]) => label).join('; ');
      const missed = row.targets.filter(([, met]) => !met).map(([label]) => label);
      const met = row.targets.length === 0 ? '—' : missed.length === 0 ? 'yes' : `**no** (${missed.join('; ')})`;
      return `| (${row.id}) ${row.title}${failures} | ${row.connections} | ${rate(row.service.perSecond)} | ${ms(row.service.p50)} | ${ms(row.service.p99)} | ${us(row.service.cpuUs)} | ${rate(row.bare?.perSecond)} | ${us(row.bare?.cpuUs)} | ${ratio} | ${rate(row.ceiling?.perSecond)} | ${targets} | ${met} |`;
    }),
    '',
    `Service peak RSS (PostgreSQL run): ${mib(peakRss.service)} (target < ${PEAK_RSS_TARGET_MIB} MiB: ${peakRss.service < PEAK_RSS_TARGET_MIB ? 'met' : '**not met**'}); bare handler: ${mib(peakRss.bare)}.`,
    `CPU time taken by other guests of the host (steal) during the PostgreSQL run: ${stolen === undefined ? 'unknown' : `${(stolen * 100).toFixed(1)}%`}.`,
    ...(profileDir ? [`CPU profiles: ${profileDir}/service and ${profileDir}/bare.`] : []),
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`bench: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
});
