/**
 * The flood scenario of issue 36: one organization's key, with no rate
 * limit, floods a `serve` process (200 keep-alive connections, 4 requests
 * pipelined on each, 15 s) while another organization reads 10 times a
 * second. Prints the quiet organization's p50/p99 at rest and under the
 * flood and its 5xx count, the flood's answers by status and problem code,
 * and the service's log lines about overload (and any error lines).
 * Target: the quiet p99 under the flood at most 2× its p99 at rest + 100 ms,
 * no 5xx for it, and the flood's excess answered 429 or 503 `overloaded`,
 * logged at most once a second.
 *
 *   npm run bench -- --only flood          (DATABASE_URL=postgres://… or the local `lending_bench`)
 *
 * The quiet client runs in a process of its own, so that the flood's load
 * generator (autocannon, in this process) does not delay its timing.
 */
import { spawn } from 'node:child_process';
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
import { compiledEntry } from './service.js';

export const FLOOD_SCENARIO_ID = 'flood';

const FLOOD_CONNECTIONS = 200;
const FLOOD_PIPELINING = 4;
const FLOOD_SECONDS = 15;
const REST_SECONDS = 10;
const QUIET_PER_SECOND = 10;

export interface FloodResult {
  readonly lines: readonly string[];
  readonly targets: readonly (readonly [string, boolean])[];
}

interface QuietSample {
  readonly status: number;
  readonly ms: number;
}

export async function runFloodScenario(log: (line: string) => void, logLevel: string): Promise<FloodResult> {
  const databaseUrl = await benchDatabaseUrl();
  const { floodAuthorization, quietAuthorization } = await prepare(databaseUrl);
  const service = await startLoggingService({ DATABASE_URL: databaseUrl, RATE_LIMIT_PER_MINUTE: '0', LOG_LEVEL: logLevel });
  try {
    log(`(flood) quiet organization alone, ${REST_SECONDS} s at ${QUIET_PER_SECOND}/s`);
    const atRest = await quietClient(service.url, quietAuthorization, REST_SECONDS);
    const linesBefore = service.lines.length;
    log(`(flood) ${FLOOD_CONNECTIONS} connections × ${FLOOD_PIPELINING} pipelined from one key, ${FLOOD_SECONDS} s, beside the quiet organization`);
    const [underFlood, floodAnswers] = await Promise.all([quietClient(service.url, quietAuthorization, FLOOD_SECONDS), floodClient(service.url, floodAuthorization)]);
    // The last overload summary comes at most a second after the flood.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const logLines = service.lines.slice(linesBefore);
    const overloadLines = logLines.filter((line) => typeof line.overloaded === 'number');
    const errorLines = logLines.filter((line) => Number(line.level) >= 50);
    const restP99 = percentile(atRest.map((sample) => sample.ms), 99);
    const floodP99 = percentile(underFlood.map((sample) => sample.ms), 99);
    const quiet5xx = underFlood.filter((sample) => sample.status >= 500 || sample.status === 0).length;
    const overloadTimes = overloadLines.map((line) => Date.parse(String(line.time)));
    const closest = Math.min(...overloadTimes.slice(1).map((time, i) => time - (overloadTimes[i] ?? 0)), Number.POSITIVE_INFINITY);
    const byCode = Object.entries(floodAnswers)
      .sort(([, a], [, b]) => b - a)
      .map(([code, count]) => `${code}: ${count.toLocaleString('en-US')}`)
      .join(', ');
    const excessOk = Object.keys(floodAnswers).every((code) => code === '200' || code === '429 rate_limited' || code === '503 overloaded');
    return {
      lines: [
        `(flood) quiet organization at rest: ${atRest.length} reads, p50 ${fmt(percentile(atRest.map((s) => s.ms), 50))} ms, p99 ${fmt(restP99)} ms`,
        `(flood) quiet organization under the flood: ${underFlood.length} reads, p50 ${fmt(percentile(underFlood.map((s) => s.ms), 50))} ms, p99 ${fmt(floodP99)} ms, 5xx ${quiet5xx}, statuses ${JSON.stringify(count(underFlood.map((s) => String(s.status))))}`,
        `(flood) the flood's answers: ${byCode}`,
        `(flood) service log during the flood: ${overloadLines.length} overload line(s) (counting ${overloadLines.reduce((sum, line) => sum + Number(line.overloaded), 0).toLocaleString('en-US')} refusals), closest two ${Number.isFinite(closest) ? `${closest} ms` : 'n/a'} apart; ${errorLines.length} error line(s)`,
      ],
      targets: [
        [`quiet p99 ≤ 2 × ${fmt(restP99)} + 100 ms`, floodP99 <= 2 * restP99 + 100],
        ['quiet 0 × 5xx', quiet5xx === 0],
        ['flood excess 429 or 503 overloaded only', excessOk],
        ['overload logged at most once a second, no error line', closest >= 900 && errorLines.length === 0],
      ],
    };
  } finally {
    await service.stop();
  }
}

export function printFloodResult(result: FloodResult): string[] {
  return [...result.lines, `(flood) targets: ${result.targets.map(([name, met]) => `${name} ${met ? '✓' : '✗'}`).join('; ')}`];
}

/** The two organizations (made on first use, 30 payment methods each) and a new key for each. */
async function prepare(databaseUrl: string): Promise<{ floodAuthorization: string; quietAuthorization: string }> {
  const store = new PostgresStore(databaseUrl, { poolSize: 2 });
  try {
    await migrate(store);
    // The node started next would otherwise publish the dataset's events while the flood is measured.
    await publishBacklog(store, () => {});
    const flood = await organization(store, 'bench_flood', 'Flooding Lender');
    const quiet = await organization(store, 'bench_quiet', 'Quiet Lender');
    return {
      floodAuthorization: basic(flood.uid, (await createApiKey(store, flood.uid)).key),
      quietAuthorization: basic(quiet.uid, (await createApiKey(store, quiet.uid)).key),
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

/** `perSecond` reads a second for `seconds`, from a process of its own (keep-alive); each read's status and time. */
async function quietClient(url: string, authorization: string, seconds: number): Promise<QuietSample[]> {
  const source = `
    const [url, authorization, seconds, perSecond] = process.argv.slice(1);
    const samples = [];
    const total = Number(seconds) * Number(perSecond);
    const start = performance.now();
    (async () => {
      for (let i = 0; i < total; i += 1) {
        const due = start + (i * 1000) / Number(perSecond);
        const wait = due - performance.now();
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
        const sent = performance.now();
        let status = 0;
        try {
          const response = await fetch(url + '/api/methods/', { headers: { authorization } });
          await response.arrayBuffer();
          status = response.status;
        } catch {}
        samples.push({ status, ms: performance.now() - sent });
      }
      process.stdout.write(JSON.stringify(samples));
    })();`;
  const child = spawn(process.execPath, ['-e', source, url, authorization, String(seconds), String(QUIET_PER_SECOND)], { stdio: ['ignore', 'pipe', 'inherit'] });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  await new Promise((resolve) => child.once('exit', resolve));
  return JSON.parse(output) as QuietSample[];
}

interface LoggingService {
  readonly url: string;
  /** Every JSON line the service has logged so far. */
  readonly lines: Record<string, unknown>[];
  stop(): Promise<void>;
}

/** `serve` as production runs it (the compiled entry), keeping its log lines (startService drops them). */
async function startLoggingService(env: Record<string, string>): Promise<LoggingService> {
  const child = spawn(process.execPath, [await compiledEntry(), 'serve', '--port', '0', '--json'], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
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
    lines,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}
