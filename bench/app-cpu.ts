/**
 * The application's own CPU time per request, without sockets or database:
 * the app exactly as `serve` builds it (compiled, from a `dist/` directory),
 * fed by `inject` (no network), on a store that replays rows recorded once
 * from the bench database. What remains is Fastify, the hooks, auth (cached),
 * query parsing, the list cache, serialization, links, the access log and
 * metrics, plus inject's own overhead (the same in every variant). Made for
 * A/B comparisons on a busy machine: CPU time rather than wall time, and the
 * variants run in one process, round by round in turn, so drift hits them all.
 *
 *   DATABASE_URL=postgres://…/lending_bench node --import tsx bench/app-cpu.ts [--scenario a] [--requests 10000] [--rounds 5]
 *       --variant dist --variant DIR[:no-metrics][:log=info][:auth-failures=0][:no-auth-cache][:budget=MS] …
 *
 * A variant is a compiled build (`npm run build` makes `dist`; copy one aside
 * to compare two builds — it must sit in the project root, e.g.
 * `.build-test-before/`) with optional settings; what a variant does not set
 * is as `serve` sets it by default (`budget=0`: no per-request database budget,
 * as with DATABASE_REQUEST_BUDGET_MS=0). The database must hold the bench
 * dataset at `--scale` (npm run bench -- --scale 0.01 --load-only).
 */
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { Registry } from 'prom-client';
import type * as AppModule from '../src/app.js';
import type * as ConfigModule from '../src/config.js';
import type * as ApiKeysModule from '../src/auth/api-keys.js';
import type * as LoggerModule from '../src/logger.js';
import type { LedgerWriter } from '../src/ledger/ledger-writer.js';
import type * as NodeLedgerModule from '../src/node-ledger.js';
import type * as PostgresStoreModule from '../src/store/postgres-store.js';
import type { Store } from '../src/store/store.js';
import { organizations, type DatasetSpec, type OrganizationShape } from './dataset.js';
import { scenarios } from './scenarios.js';

const { values: args } = parseArgs({
  options: {
    variant: { type: 'string', multiple: true, default: ['dist'] },
    scenario: { type: 'string', default: 'a' },
    requests: { type: 'string', default: '10000' },
    rounds: { type: 'string', default: '5' },
    concurrency: { type: 'string', default: '16' },
    scale: { type: 'string', default: '0.01' },
    seed: { type: 'string', default: '42' },
  },
});

const databaseUrl = process.env.DATABASE_URL;
if (!databaseUrl) throw new Error('set DATABASE_URL to the bench database');
const spec: DatasetSpec = { seed: Number(args.seed), scale: Number(args.scale) };
const [largest] = organizations(spec) as [OrganizationShape];
const scenario = scenarios(spec, largest).find((candidate) => candidate.id === args.scenario);
if (!scenario) throw new Error(`no scenario ${args.scenario}`);
const paths = Array.from({ length: 2000 }, () => `/api/${scenario.path}/?${scenario.nextQuery()}`);

interface Variant {
  readonly name: string;
  readonly inject: (url: string) => Promise<void>;
  readonly close: () => Promise<void>;
  readonly results: number[];
}

async function startVariant(spec: string): Promise<Variant> {
  const [dir = 'dist', ...settings] = spec.split(':');
  const setting = (name: string) => settings.find((candidate) => candidate === name || candidate.startsWith(`${name}=`))?.split('=')[1] ?? (settings.includes(name) ? '' : undefined);
  const dist = pathToFileURL(`${path.resolve(dir)}/`);
  const load = <T>(file: string) => import(new URL(file, dist).href) as Promise<T>;
  const { buildApp } = await load<typeof AppModule>('app.js');
  const { createLogger } = await load<typeof LoggerModule>('logger.js');
  const { PostgresStore } = await load<typeof PostgresStoreModule>('store/postgres-store.js');
  const { createApiKey } = await load<typeof ApiKeysModule>('auth/api-keys.js');
  // A build from before the app took its ledger from the process has no node-ledger.js: it builds its own.
  const nodeLedger = await load<typeof NodeLedgerModule>('node-ledger.js').then((module) => module.nodeLedger, () => undefined);
  // serve's defaults for what the variant does not set (the database budget, the slow-client limits).
  const config = (await load<typeof ConfigModule>('config.js')).loadConfig({ DATABASE_URL: databaseUrl });

  // Record: the rows each statement text returns, once, from the real database; then replay them.
  const real = new PostgresStore(databaseUrl as string, { poolSize: 2 });
  const recorded = new Map<string, unknown[]>();
  const key = await createApiKey(real, largest.uid);
  const authorization = `Basic ${Buffer.from(`${largest.uid}:${key.key}`).toString('base64')}`;
  const replay: Store = Object.create(real) as Store;
  let recording = true;
  replay.query = async <Row>(sql: string, params?: readonly unknown[]) => {
    if (!recording) {
      const rows = recorded.get(sql);
      if (rows) return rows as Row[];
    }
    const rows = await real.query<Row>(sql, params);
    recorded.set(sql, rows);
    return rows;
  };
  const authFailures = setting('auth-failures');
  const app = await buildApp({
    store: replay,
    // Log lines go nowhere: what is measured is making them, not the pipe they would be written to.
    loggerInstance: createLogger(setting('log') ?? 'warn', { write: () => {} }),
    ...(setting('no-metrics') === undefined ? { metrics: new Registry() } : {}),
    rateLimit: { perMinute: 0, authFailuresPerMinute: authFailures === undefined ? 20 : Number(authFailures) },
    ...(setting('no-auth-cache') === undefined ? { authCache: { ttlMs: 5000 } } : {}),
    http: config.http,
    databaseRequestBudgetMs: Number(setting('budget') ?? config.databaseRequestBudgetMs),
    ledger: nodeLedger?.(replay, config) as LedgerWriter,
  });
  const inject = async (url: string) => {
    const response = await app.inject({ method: 'GET', url, headers: { authorization, host: '127.0.0.1:3000' } });
    if (response.statusCode !== 200) throw new Error(`${url}: ${response.statusCode} ${response.body}`);
  };
  for (const url of paths.slice(0, 200)) await inject(url);
  recording = false;
  await real.query('UPDATE api_keys SET revoked_at = now() WHERE id = $1', [key.id]);
  return {
    name: spec,
    inject,
    results: [],
    close: async () => {
      await app.close();
      await real.close();
    },
  };
}

const variants: Variant[] = [];
for (const spec of args.variant) variants.push(await startVariant(spec));
const requests = Number(args.requests);
const concurrency = Number(args.concurrency);
for (let round = 0; round <= Number(args.rounds); round += 1) {
  for (const variant of variants) {
    let next = 0;
    const before = process.cpuUsage();
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < requests) await variant.inject(paths[next++ % paths.length] as string);
      }),
    );
    const used = process.cpuUsage(before);
    // Round 0 warms the JIT up.
    if (round > 0) variant.results.push((used.user + used.system) / requests);
  }
}
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? NaN;
const baseline = variants[0] as Variant;
for (const variant of variants) {
  const ratios = variant.results.map((us, index) => us / (baseline.results[index] ?? NaN));
  process.stdout.write(
    `scenario ${scenario.id} ${variant.name}: median ${median(variant.results).toFixed(1)} µs CPU per request ` +
      `(rounds ${variant.results.map((us) => us.toFixed(1)).join(' / ')}); against the first, round by round: median ${median(ratios).toFixed(3)}×, median difference ${median(variant.results.map((us, index) => us - (baseline.results[index] ?? NaN))).toFixed(1)} µs\n`,
  );
}
for (const variant of variants) await variant.close();
