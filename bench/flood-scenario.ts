/**
 * The flood scenarios: one organization's key floods a `serve` process (200
 * keep-alive connections, 4 requests pipelined on each, 15 s) while another
 * organization reads 10 times a second. `flood` runs the service with its
 * default settings (issue 49): the key's request budget is spent in the first
 * moment, and the rest of the flood is refused 429 — what has to stay cheap.
 * `flood-unlimited` (issue 36) turns the budgets off, so the flood's reads
 * reach the database and queue in its organization's share. Prints the quiet organization's p50/p99 at rest and under the
 * flood and its 5xx count, the flood's answers by status and problem code,
 * and the service's log lines about overload (and any error lines).
 * Target: the quiet p99 under the flood at most 2× its p99 at rest + 100 ms,
 * no 5xx for it, and the flood's excess answered 429 or 503 `overloaded`,
 * logged at most once a second.
 *
 *   npm run bench -- --only flood                     (DATABASE_URL=postgres://… or the local `lending_bench`)
 *   npm run bench -- --only flood,flood-unlimited
 *
 * The quiet client runs in a process of its own, so that the flood's load
 * generator (autocannon, in this process) does not delay its timing.
 */
import { spawn } from 'node:child_process';
import os from 'node:os';
import { createInterface } from 'node:readline';
import autocannon from 'autocannon';
import { createApiKey } from '../src/auth/api-keys.js';
import { createOrganization, findOrganization, type Organization } from '../src/organizations/organizations.js';
import { migrate } from '../src/store/migrate.js';
import { PostgresStore } from '../src/store/postgres-store.js';
import { insertPaymentMethods, paymentMethod } from '../test/helpers/records.js';
import { benchDatabaseUrl } from './database.js';
import { publishBacklog } from './load.js';
import { percentile } from './burst-client.js';
import { processCpuSeconds } from './process-stats.js';
import type { MeasuredRow } from './results-record.js';
import { compiledEntry } from './service.js';

export const FLOOD_SCENARIO_IDS = ['flood', 'flood-unlimited'] as const;
export type FloodScenarioId = (typeof FLOOD_SCENARIO_IDS)[number];

/** What each scenario sets in the service's environment beyond the database and the log level. */
const SETTINGS: Record<FloodScenarioId, { readonly env: Record<string, string>; readonly title: string }> = {
  flood: { env: {}, title: 'the default settings' },
  'flood-unlimited': { env: { RATE_LIMIT_PER_MINUTE: '0' }, title: 'RATE_LIMIT_PER_MINUTE=0' },
};

const FLOOD_CONNECTIONS = 200;
const FLOOD_PIPELINING = 4;
const FLOOD_SECONDS = 15;
const REST_SECONDS = 10;
const QUIET_PER_SECOND = 10;
/**
 * The quiet organization's reads take turns over this many keys: at 10 a second for 25 s, one key would
 * spend the default budget of 60 a minute (RATE_LIMIT_PER_MINUTE) itself; over ten, each makes 25.
 */
const QUIET_KEYS = 10;
/** Reads before the measured ones, not counted: the first opens a connection and finds the statements unprepared. */
const QUIET_WARMUP_READS = 3;

export interface FloodResult {
  readonly id: FloodScenarioId;
  readonly lines: readonly string[];
  readonly targets: readonly (readonly [string, boolean])[];
  /** For bench/results: the quiet organization's reads at rest and under the flood, and the flood's answers. */
  readonly figures: {
    readonly atRest: { readonly p50Ms: number; readonly p99Ms: number };
    readonly underFlood: { readonly p50Ms: number; readonly p99Ms: number; readonly failures: number };
    readonly flood: { readonly perSecond: number; readonly cpuUsPerAnswer: number };
  };
}

interface QuietSample {
  readonly status: number;
  readonly ms: number;
  /** When it was sent, ms after the first. */
  readonly at: number;
}

/** `profileDir`: the service runs with `node --cpu-prof` and leaves its profile there (bench/profile-summary.ts reads it). */
export async function runFloodScenario(id: FloodScenarioId, log: (line: string) => void, logLevel: string, profileDir?: string): Promise<FloodResult> {
  const databaseUrl = await benchDatabaseUrl();
  const { floodAuthorization, quietAuthorizations } = await prepare(databaseUrl);
  const settings = SETTINGS[id];
  const service = await startLoggingService({ DATABASE_URL: databaseUrl, LOG_LEVEL: logLevel, ...settings.env }, profileDir);
  const say = (line: string) => `(${id}) ${line}`;
  try {
    log(say(`${settings.title}; the quiet organization alone, ${REST_SECONDS} s at ${QUIET_PER_SECOND}/s`));
    const quiet = quietClient(service.url, quietAuthorizations);
    const atRest = await quiet.atRest;
    const linesBefore = service.lines.length;
    log(say(`${FLOOD_CONNECTIONS} connections × ${FLOOD_PIPELINING} pipelined from one key, ${FLOOD_SECONDS} s, beside the quiet organization`));
    const cpuBefore = await processCpuSeconds(service.pid);
    const [underFlood, floodAnswers] = await Promise.all([quiet.underFlood(), floodClient(service.url, floodAuthorization)]);
    const cpuSeconds = (await processCpuSeconds(service.pid)) - cpuBefore;
    // The last overload summary comes at most a second after the flood.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const logLines = service.lines.slice(linesBefore);
    const overloadLines = logLines.filter((line) => typeof line.overloaded === 'number');
    const errorLines = logLines.filter((line) => Number(line.level) >= 50);
    const unreachableLines = logLines.filter((line) => /unreachable/i.test(JSON.stringify(line)));
    const restMs = atRest.map((sample) => sample.ms);
    const floodMs = underFlood.map((sample) => sample.ms);
    const restP99 = percentile(restMs, 99);
    const floodP99 = percentile(floodMs, 99);
    const quiet5xx = underFlood.filter((sample) => sample.status >= 500 || sample.status === 0).length;
    const overloadTimes = overloadLines.map((line) => Date.parse(String(line.time)));
    const closest = Math.min(...overloadTimes.slice(1).map((time, i) => time - (overloadTimes[i] ?? 0)), Number.POSITIVE_INFINITY);
    const answered = Object.values(floodAnswers).reduce((sum, n) => sum + n, 0);
    const byCode = Object.entries(floodAnswers)
      .sort(([, a], [, b]) => b - a)
      .map(([code, n]) => `${code}: ${n.toLocaleString('en-US')}`)
      .join(', ');
    const excessOk = Object.keys(floodAnswers).every((code) => code === '200' || code === '429 rate_limited' || code === '503 overloaded');
    const cpuUsPerAnswer = (cpuSeconds * 1e6) / Math.max(1, answered);
    return {
      id,
      lines: [
        say(`${settings.title}; load average ${os.loadavg().map((load) => load.toFixed(1)).join(' ')}`),
        say(`quiet organization at rest: ${atRest.length} reads, p50 ${fmt(percentile(restMs, 50))} ms, p99 ${fmt(restP99)} ms`),
        say(`quiet organization under the flood: ${underFlood.length} reads, p50 ${fmt(percentile(floodMs, 50))} ms, p99 ${fmt(floodP99)} ms, 5xx ${quiet5xx}, statuses ${JSON.stringify(count(underFlood.map((s) => String(s.status))))}`),
        say(`the quiet organization's slowest reads under the flood: ${slowest(underFlood)}`),
        say(`the flood's answers: ${byCode} (${fmt(answered / FLOOD_SECONDS)}/s; the service's CPU ${fmt(cpuUsPerAnswer)} µs per answer)`),
        say(`service log during the flood: ${overloadLines.length} overload line(s) (counting ${overloadLines.reduce((sum, line) => sum + Number(line.overloaded), 0).toLocaleString('en-US')} refusals), closest two ${Number.isFinite(closest) ? `${closest} ms` : 'n/a'} apart; ${errorLines.length} error line(s), ${unreachableLines.length} naming the database unreachable`),
      ],
      targets: [
        [`quiet p99 ≤ 2 × ${fmt(restP99)} + 100 ms`, floodP99 <= 2 * restP99 + 100],
        ['quiet 0 × 5xx', quiet5xx === 0],
        ['flood excess 429 or 503 overloaded only', excessOk],
        ['overload logged at most once a second, no error line, never as unreachable', closest >= 900 && errorLines.length === 0 && unreachableLines.length === 0],
      ],
      figures: {
        atRest: { p50Ms: percentile(restMs, 50), p99Ms: restP99 },
        underFlood: { p50Ms: percentile(floodMs, 50), p99Ms: floodP99, failures: quiet5xx },
        flood: { perSecond: answered / FLOOD_SECONDS, cpuUsPerAnswer },
      },
    };
  } finally {
    await service.stop();
  }
}

export function printFloodResult(result: FloodResult): string[] {
  return [...result.lines, `(${result.id}) targets: ${result.targets.map(([name, met]) => `${name} ${met ? '✓' : '✗'}`).join('; ')}`];
}

/** The two organizations (made on first use, 30 payment methods each), a new key for the flood and QUIET_KEYS new keys for the quiet one. */
async function prepare(databaseUrl: string): Promise<{ floodAuthorization: string; quietAuthorizations: string[] }> {
  const store = new PostgresStore(databaseUrl, { poolSize: 2 });
  try {
    await migrate(store);
    // The node started next would otherwise publish the dataset's events while the flood is measured.
    await publishBacklog(store, () => {});
    const flood = await organization(store, 'bench_flood', 'Flooding Lender');
    const quiet = await organization(store, 'bench_quiet', 'Quiet Lender');
    return {
      floodAuthorization: basic(flood.uid, (await createApiKey(store, flood.uid)).key),
      quietAuthorizations: await Promise.all(Array.from({ length: QUIET_KEYS }, async () => basic(quiet.uid, (await createApiKey(store, quiet.uid)).key))),
    };
  } finally {
    await store.close();
  }
}

async function organization(store: PostgresStore, uid: string, name: string): Promise<Organization> {
  const found = await findOrganization(store, uid);
  if (found) return found;
  const created = await createOrganization(store, name, uid);
  await insertPaymentMethods(store, created.id, Array.from({ length: 30 }, (_, i) => paymentMethod({ uid: `pm_${uid}_${i}` })));
  return created;
}

function basic(user: string, password: string): string {
  return `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
}

function fmt(ms: number): string {
  return ms.toFixed(1);
}

/** The five slowest samples: how long, and when (s after the first was sent). */
function slowest(samples: readonly QuietSample[]): string {
  return [...samples]
    .sort((a, b) => b.ms - a.ms)
    .slice(0, 5)
    .map((sample) => `${fmt(sample.ms)} ms at ${(sample.at / 1000).toFixed(1)} s`)
    .join(', ');
}

function count(values: readonly string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const value of values) counts[value] = (counts[value] ?? 0) + 1;
  return counts;
}

/** The flood: autocannon, answers counted by status and, for a problem, its code. */
async function floodClient(url: string, authorization: string): Promise<Record<string, number>> {
  const answers: Record<string, number> = {};
  const lastBody = new WeakMap<object, string>();
  await new Promise<void>((resolve, reject) => {
    const instance = autocannon(
      {
        url: `${url}/api/methods/`,
        connections: FLOOD_CONNECTIONS,
        pipelining: FLOOD_PIPELINING,
        duration: FLOOD_SECONDS,
        headers: { authorization },
        setupClient: (client) => client.on('body', (body: Buffer) => lastBody.set(client, body.subarray(0, 400).toString())),
      },
      (error) => (error ? reject(error instanceof Error ? error : new Error(String(error))) : resolve()),
    );
    instance.on('response', (client, statusCode) => {
      const code = statusCode >= 400 ? /"code":"([a-z_]+)"/.exec(lastBody.get(client) ?? '')?.[1] : undefined;
      const key = code ? `${statusCode} ${code}` : String(statusCode);
      answers[key] = (answers[key] ?? 0) + 1;
    });
  });
  return answers;
}

/** The quiet organization's reads: at rest, then under the flood; `underFlood` starts them once the flood is told to start. */
interface QuietClient {
  readonly atRest: Promise<QuietSample[]>;
  underFlood(): Promise<QuietSample[]>;
}

/**
 * QUIET_PER_SECOND reads a second from a process of its own, on one keep-alive connection throughout (as a
 * steady client keeps its connection), each with the next of `authorizations` in turn: QUIET_WARMUP_READS not
 * counted, REST_SECONDS of reads alone, then, once told on stdin, FLOOD_SECONDS of reads beside the flood.
 */
function quietClient(url: string, authorizations: readonly string[]): QuietClient {
  const source = `
    const [url, keys, perSecond, warmup, restSeconds, floodSeconds] = process.argv.slice(1);
    const authorizations = JSON.parse(keys);
    let n = 0;
    const read = async () => {
      const authorization = authorizations[n++ % authorizations.length];
      const response = await fetch(url + '/api/methods/', { headers: { authorization } });
      await response.arrayBuffer();
      return response.status;
    };
    const phase = async (seconds) => {
      const samples = [];
      const total = Number(seconds) * Number(perSecond);
      const start = performance.now();
      for (let i = 0; i < total; i += 1) {
        const wait = start + (i * 1000) / Number(perSecond) - performance.now();
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
        const sent = performance.now();
        let status = 0;
        try {
          status = await read();
        } catch {}
        samples.push({ status, ms: performance.now() - sent, at: sent - start });
      }
      process.stdout.write(JSON.stringify(samples) + '\\n');
    };
    (async () => {
      for (let i = 0; i < Number(warmup); i += 1) await read();
      await phase(restSeconds);
      await new Promise((resolve) => process.stdin.once('data', resolve));
      await phase(floodSeconds);
      process.exit(0);
    })();`;
  const args = [url, JSON.stringify(authorizations), String(QUIET_PER_SECOND), String(QUIET_WARMUP_READS), String(REST_SECONDS), String(FLOOD_SECONDS)];
  const child = spawn(process.execPath, ['-e', source, ...args], { stdio: ['pipe', 'pipe', 'inherit'] });
  const phases: ((samples: QuietSample[]) => void)[] = [];
  const atRest = new Promise<QuietSample[]>((resolve) => phases.push(resolve));
  const underFlood = new Promise<QuietSample[]>((resolve) => phases.push(resolve));
  createInterface({ input: child.stdout }).on('line', (line) => phases.shift()?.(JSON.parse(line) as QuietSample[]));
  return {
    atRest,
    underFlood: () => {
      child.stdin.end('go\n');
      return underFlood;
    },
  };
}

interface LoggingService {
  readonly url: string;
  readonly pid: number;
  /** Every JSON line the service has logged so far. */
  readonly lines: Record<string, unknown>[];
  stop(): Promise<void>;
}

/** `serve` as production runs it (the compiled entry), keeping its log lines (startService drops them). */
async function startLoggingService(env: Record<string, string>, profileDir: string | undefined): Promise<LoggingService> {
  const profile = profileDir ? ['--cpu-prof', '--cpu-prof-dir', profileDir] : [];
  const child = spawn(process.execPath, [...profile, await compiledEntry(), 'serve', '--port', '0', '--json'], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  const lines: Record<string, unknown>[] = [];
  const url = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout }).on('line', (line) => {
      // The start-up document (pretty-printed, one member a line) names the URL; log lines are one JSON object each.
      const listening = /^\s*"url":\s*"([^"]+)"/.exec(line);
      if (listening?.[1]) return resolve(listening[1]);
      try {
        lines.push(JSON.parse(line) as Record<string, unknown>);
      } catch {
        // A line of the start-up document.
      }
    });
    child.once('exit', (code) => reject(new Error(`serve exited (${code}) before listening`)));
  });
  return {
    url,
    pid: child.pid ?? NaN,
    lines,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

/** The flood's row in bench/results/: the quiet organization's reads under the flood, beside them at rest. */
export function floodRecordRow(result: FloodResult): MeasuredRow {
  const { atRest, underFlood, flood } = result.figures;
  return {
    id: result.id,
    title: `${SETTINGS[result.id].title}: the quiet organization's reads under a flood of ${FLOOD_CONNECTIONS} connections × ${FLOOD_PIPELINING} pipelined (flood answers/s, service CPU µs per flood answer)`,
    connections: FLOOD_CONNECTIONS,
    service: { perSecond: flood.perSecond, p50: underFlood.p50Ms, p99: underFlood.p99Ms, failures: underFlood.failures, cpuUs: flood.cpuUsPerAnswer },
    atRest: { perSecond: QUIET_PER_SECOND, p50: atRest.p50Ms, p99: atRest.p99Ms, failures: 0 },
  };
}
