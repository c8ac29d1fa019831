/**
 * `npm run bench`: loads a seeded synthetic dataset into PostgreSQL through
 * the import path, starts `lending-api serve` as a child process with rate
 * limiting off, drives it over HTTP and compares each scenario with its
 * database ceiling (the same SQL through node-postgres at the same
 * concurrency). Then the embedded store: 100k records in PGlite.
 *
 *   npm run bench -- [--scale 1] [--seed 42] [--seconds 10] [--connections 32] [--only a,c] [--no-pglite]
 *                    [--load-generator auto|wrk|autocannon]
 *
 * The HTTP load comes from wrk when it is on PATH (`apt-get install wrk`),
 * else from autocannon in this process; `--load-generator` forces one. wrk
 * takes about 15 µs of CPU per request, autocannon about 50 µs, on the same
 * cores as the service and PostgreSQL. The table's first line names the one used.
 *
 * DATABASE_URL (postgres://…) selects the database; by default the harness
 * creates and uses `lending_bench` on the local server.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { createApiKey, requireOrganization } from '../src/auth/organizations.js';
import { DEFAULT_LIST_CACHE, ListCache } from '../src/listing/list-cache.js';
import { listRecords } from '../src/listing/list-records.js';
import { parseListQuery } from '../src/listing/query-parser.js';
import { RESOURCES } from '../src/resources/index.js';
import { PgliteStore } from '../src/store/pglite-store.js';
import { PostgresStore } from '../src/store/postgres-store.js';
import type { Store } from '../src/store/store.js';
import { organizations, type DatasetSpec, type OrganizationShape } from './dataset.js';
import { benchDatabaseUrl } from './database.js';
import { readCpuTimes, stolenShare } from './host-load.js';
import { ensureDataset } from './load.js';
import { chooseLoadGenerator, driveDirect, type LoadGenerator, type LoadGeneratorChoice, type Measurement } from './measure.js';
import { scenarios, type Scenario } from './scenarios.js';
import { startService, type RunningService } from './service.js';

const { values: args } = parseArgs({
  options: {
    scale: { type: 'string', default: '1' },
    seed: { type: 'string', default: '42' },
    seconds: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '2' },
    connections: { type: 'string', default: '32' },
    only: { type: 'string' },
    'pool-size': { type: 'string', default: '10' },
    'log-level': { type: 'string', default: 'warn' },
    'no-pglite': { type: 'boolean', default: false },
    'load-only': { type: 'boolean', default: false },
    'pglite-records': { type: 'string', default: '100000' },
    'load-generator': { type: 'string', default: 'auto' },
  },
});

const spec: DatasetSpec = { seed: Number(args.seed), scale: Number(args.scale) };
const seconds = Number(args.seconds);
const warmup = Number(args.warmup);
const connections = Number(args.connections);
const poolSize = Number(args['pool-size']);
const LOAD_GENERATORS: readonly LoadGeneratorChoice[] = ['auto', 'wrk', 'autocannon'];
const loadGeneratorChoice = LOAD_GENERATORS.find((name) => name === args['load-generator']);
if (!loadGeneratorChoice) throw new Error(`--load-generator must be one of ${LOAD_GENERATORS.join(', ')}, not ${args['load-generator']}`);
const log = (line: string) => process.stderr.write(`bench: ${line}\n`);

interface Row {
  readonly id: string;
  readonly title: string;
  readonly service: Measurement;
  readonly ceiling?: Measurement;
  readonly target: string;
  readonly met: boolean;
}

const TARGETS: Record<string, (service: Measurement, ceiling?: Measurement) => [string, boolean]> = {
  a: (s, c) => [`≥ 70% of ceiling, p99 < 15 ms`, !!c && s.perSecond / c.perSecond >= 0.7 && s.p99 < 15],
  b: (s, c) => [`≥ 70% of ceiling, p99 < 15 ms`, !!c && s.perSecond / c.perSecond >= 0.7 && s.p99 < 15],
  c: (s) => ['p50 < 10 ms', s.p50 < 10],
  d: (s) => ['p50 < 50 ms', s.p50 < 50],
  e: (s) => ['p50 < 20 ms', s.p50 < 20],
  f: (s) => ['p50 < 20 ms', s.p50 < 20],
  pglite: (s) => ['p50 < 5 ms', s.p50 < 5],
};

async function main(): Promise<void> {
  const rows: Row[] = [];
  const generator = await chooseLoadGenerator(loadGeneratorChoice);
  log(`load generator: ${generator.description}`);
  const databaseUrl = await benchDatabaseUrl();
  const store = new PostgresStore(databaseUrl, { poolSize, connectionTimeoutMs: 30_000 });
  let peakRss = NaN;
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
    const service = await startService({
      DATABASE_URL: databaseUrl,
      RATE_LIMIT_PER_MINUTE: '0',
      LOG_LEVEL: args['log-level'],
      DATABASE_POOL_SIZE: String(poolSize),
    });
    const [server] = await store.query<{ version: string; shared_buffers: string }>(
      `SELECT current_setting('server_version') AS version, current_setting('shared_buffers') AS shared_buffers`,
    );
    settings = `PostgreSQL ${server?.version}, shared_buffers ${server?.shared_buffers}`;
    try {
      const before = await readCpuTimes();
      rows.push(...(await runScenarios(store, service, largest, generator)));
      stolen = stolenShare(before, await readCpuTimes());
      peakRss = await service.peakRssMiB();
    } finally {
      await service.stop();
    }
  } finally {
    await store.close();
  }
  if (args['load-only']) return;
  if (!args['no-pglite']) rows.push(...(await runPglite(generator)));
  printTable(rows, peakRss, settings, stolen, generator);
}

async function runScenarios(
  store: PostgresStore,
  service: RunningService,
  largest: OrganizationShape,
  generator: LoadGenerator,
): Promise<Row[]> {
  const org = await requireOrganization(store, largest.uid);
  const key = await createApiKey(store, largest.uid);
  const authorization = `Basic ${Buffer.from(`${largest.uid}:${key.key}`).toString('base64')}`;
  const wanted = args.only?.split(',');
  const rows: Row[] = [];
  for (const scenario of scenarios(spec, largest)) {
    if (wanted && !wanted.includes(scenario.id)) continue;
    rows.push(await measureScenario(store, generator, service.url, authorization, org.id, scenario));
  }
  await store.query('UPDATE api_keys SET revoked_at = now() WHERE id = $1', [key.id]);
  return rows;
}

async function measureScenario(
  store: Store,
  generator: LoadGenerator,
  url: string,
  authorization: string,
  orgId: string,
  scenario: Scenario,
): Promise<Row> {
  const load = (secs: number) =>
    generator.drive({
      url,
      headers: { authorization },
      nextPath: () => `/api/${scenario.path}/?${scenario.nextQuery()}`,
      connections,
      seconds: secs,
    });
  log(`(${scenario.id}) ${scenario.title}: service`);
  await load(warmup);
  const service = await load(seconds);
  log(`(${scenario.id}) ${scenario.title}: database ceiling`);
  const ceiling = await measureCeiling(store, orgId, scenario);
  const [target, met] = (TARGETS[scenario.id] ?? (() => ['—', true]))(service, ceiling);
  return { id: scenario.id, title: scenario.title, service, ceiling, target, met };
}

/** The same SQL the service issues for each request (the list engine's), straight through the driver. */
async function measureCeiling(store: Store, orgId: string, scenario: Scenario): Promise<Measurement> {
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
    try {
      const scenario = scenarios(spec, org)[0] as Scenario;
      const rows: Row[] = [];
      // PGlite runs one query at a time, so latency at N connections is about
      // N times the single-client figure: both are reported.
      for (const clients of [1, connections]) {
        const load = (secs: number) =>
          generator.drive({
            url: service.url,
            headers: { authorization },
            nextPath: () => `/api/methods/?${scenario.nextQuery()}`,
            connections: clients,
            seconds: secs,
          });
        log(`PGlite (a) ${scenario.title}, ${clients} connection(s): service`);
        await load(warmup);
        const measured = await load(seconds);
        const [target, met] = clients === 1 ? (TARGETS.pglite as (s: Measurement) => [string, boolean])(measured) : ['—', true];
        rows.push({
          id: 'a',
          title: `PGlite, ${records.toLocaleString('en-US')} records, ${clients} connection${clients === 1 ? '' : 's'}: ${scenario.title}`,
          service: measured,
          target,
          met,
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

function printTable(rows: readonly Row[], peakRss: number, settings: string, stolen: number | undefined, generator: LoadGenerator): void {
  const ms = (value: number) => (Number.isFinite(value) ? value.toFixed(1) : '—');
  const lines = [
    `Scale ${spec.scale} (seed ${spec.seed}), ${connections} connections, ${seconds} s per measurement, load generator ${generator.description}, Node ${process.version}, ${settings}.`,
    '',
    '| scenario | service req/s | p50 ms | p99 ms | ceiling req/s | ceiling p50 ms | ceiling p99 ms | service/ceiling | target | met |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---|---|',
    ...rows.map((row) => {
      const c = row.ceiling;
      const failures = row.service.failures > 0 ? ` (${row.service.failures} failed)` : '';
      return `| (${row.id}) ${row.title}${failures} | ${row.service.perSecond.toFixed(0)} | ${ms(row.service.p50)} | ${ms(row.service.p99)} | ${c ? c.perSecond.toFixed(0) : '—'} | ${c ? ms(c.p50) : '—'} | ${c ? ms(c.p99) : '—'} | ${c ? `${((row.service.perSecond / c.perSecond) * 100).toFixed(0)}%` : '—'} | ${row.target} | ${row.met ? 'yes' : '**no**'} |`;
    }),
    '',
    `Service peak RSS (PostgreSQL run): ${Number.isFinite(peakRss) ? peakRss.toFixed(0) : '—'} MiB (target < 250 MiB: ${peakRss < 250 ? 'met' : '**not met**'}).`,
    `CPU time taken by other guests of the host (steal) during the PostgreSQL run: ${stolen === undefined ? 'unknown' : `${(stolen * 100).toFixed(1)}%`}.`,
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`bench: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
});
