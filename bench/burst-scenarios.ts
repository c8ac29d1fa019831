/**
 * The burst scenarios of issue 25 (w3–w6): what a lender's loan system meets
 * when it leans on the write path — bursts over two `serve` processes on one
 * PostgreSQL, the same Idempotency-Key on both, a process SIGKILLed
 * mid-burst, the database frozen mid-burst. Each runs on a PostgreSQL the
 * harness starts for itself (fsync on, as production runs), so its deadlock
 * count (`pg_stat_database.deadlocks`) is its own and SIGSTOP freezes nothing
 * anyone else uses; two fresh service processes (the compiled entry, default
 * settings) per scenario. Each prints the answers counted (201, replay, 409
 * and 503 by code), the deadlocks PostgreSQL counted, and a money check
 * (bench/money-check.ts).
 *
 *   npm run bench -- --only w3,w4,w5,w6
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { createApiKey } from '../src/auth/api-keys.js';
import { requireOrganization } from '../src/organizations/organizations.js';
import { migrate } from '../src/store/migrate.js';
import { PostgresStore } from '../src/store/postgres-store.js';
import { createTempPostgres, postgresBinDir, type TempPostgres } from '../test/helpers/temp-postgres.js';
import { isFinal, percentile, postDrawdown, tally, type Answer, type LogicalWrite } from './burst-client.js';
import { checkMoney, deadlocks, describeMoney, lyingNothingRan, type MoneyCheck } from './money-check.js';
import { startService, type RunningService } from './service.js';
import { ensureWriteLimits, HOT_LIMIT_UID, WRITES_ORG_UID } from './write-scenarios.js';

export const BURST_SCENARIO_IDS = ['w3', 'w4', 'w5', 'w6'] as const;

export interface BurstResult {
  readonly id: string;
  readonly title: string;
  readonly lines: readonly string[];
  /** Each target with whether it was met. */
  readonly targets: readonly (readonly [string, boolean])[];
}

interface Context {
  readonly pg: TempPostgres;
  readonly store: PostgresStore;
  readonly orgId: string;
  readonly authorization: string;
  readonly log: (line: string) => void;
  readonly logLevel: string;
}

/** How many times a client retries an unanswered or 503 write with its key before giving up (bounded). */
const RETRIES = 8;
/** A freeze of the database, as the issue measured it. */
const FREEZE_MS = 5000;
/** Stats reach pg_stat_database when a backend goes idle, at most once a second. */
const STATS_FLUSH_MS = 1500;

export async function runBurstScenarios(wanted: readonly string[], log: (line: string) => void, logLevel: string): Promise<BurstResult[]> {
  if (!BURST_SCENARIO_IDS.some((id) => wanted.includes(id))) return [];
  const binDir = postgresBinDir();
  if (!binDir) throw new Error('w3–w6 need the PostgreSQL server binaries (initdb, pg_ctl) to start a PostgreSQL of their own');
  const pg = await createTempPostgres(binDir, { settings: { fsync: 'on', max_connections: 100 } });
  const store = new PostgresStore(pg.url, { poolSize: 4, connectionTimeoutMs: 30_000 });
  try {
    await migrate(store);
    await ensureWriteLimits(store);
    const org = await requireOrganization(store, WRITES_ORG_UID);
    const key = await createApiKey(store, WRITES_ORG_UID, undefined, 'write');
    const context: Context = {
      pg,
      store,
      orgId: org.id,
      authorization: `Basic ${Buffer.from(`${WRITES_ORG_UID}:${key.key}`).toString('base64')}`,
      log,
      logLevel,
    };
    const results: BurstResult[] = [];
    if (wanted.includes('w3')) results.push(await w3(context));
    if (wanted.includes('w4')) results.push(await w4(context));
    if (wanted.includes('w5')) results.push(await w5(context));
    if (wanted.includes('w6')) results.push(await w6(context));
    return results;
  } finally {
    await pg.signal('SIGCONT').catch(() => {});
    await store.close();
    await pg.destroy();
  }
}

/** Two service processes on the scenario's PostgreSQL, stopped (or already killed) afterwards. */
async function withTwoServices<T>(context: Context, run: (services: readonly [RunningService, RunningService]) => Promise<T>): Promise<T> {
  const env = { DATABASE_URL: context.pg.url, RATE_LIMIT_PER_MINUTE: '0', WRITE_RATE_LIMIT_PER_MINUTE: '0', LOG_LEVEL: context.logLevel };
  const first = await startService(env);
  try {
    const second = await startService(env);
    try {
      return await run([first, second]);
    } finally {
      await second.stop();
    }
  } finally {
    await first.stop();
  }
}

function newWrites(prefix: string, count: number, limitOf: (i: number) => string): LogicalWrite[] {
  const run = randomUUID().slice(0, 8);
  return Array.from({ length: count }, (_, i) => ({ key: randomUUID(), reference: `${prefix}-${run}-${i}`, limitUid: limitOf(i), amount: '1.00' }));
}

const spreadLimit = (k: number) => `cl_bench_w_${k}`;

/** Retries every write whose answer is not final, with its key, on `service`, until final or RETRIES run out. */
async function retryUntilFinal(service: RunningService, authorization: string, answers: Map<LogicalWrite, Answer>): Promise<number> {
  let retried = 0;
  for (let round = 0; round < RETRIES; round += 1) {
    const pending = [...answers].filter(([, answer]) => !isFinal(answer)).map(([write]) => write);
    if (pending.length === 0) break;
    retried += pending.length;
    if (round > 0) await sleep(1000);
    const again = await Promise.all(pending.map((write) => postDrawdown(service.url, authorization, write)));
    pending.forEach((write, i) => answers.set(write, again[i] as Answer));
  }
  return retried;
}

function summary(answers: readonly Answer[], wallMs: number): string {
  const ms = answers.map((answer) => answer.ms);
  return `${tally(answers)} — ${answers.length} in ${Math.round(wallMs)} ms, p50 ${Math.round(percentile(ms, 50))} ms, p99 ${Math.round(percentile(ms, 99))} ms`;
}

async function deadlocksDuring<T>(context: Context, run: () => Promise<T>): Promise<{ result: T; deadlocks: number }> {
  const before = await deadlocks(context.store);
  const result = await run();
  await sleep(STATS_FLUSH_MS);
  return { result, deadlocks: (await deadlocks(context.store)) - before };
}

/** A burst sent at once, alternately to the two services; each write's answer. */
async function burst(services: readonly RunningService[], authorization: string, writes: readonly LogicalWrite[]): Promise<{ answers: Map<LogicalWrite, Answer>; wallMs: number }> {
  const started = performance.now();
  const answered = await Promise.all(writes.map((write, i) => postDrawdown((services[i % services.length] as RunningService).url, authorization, write)));
  return { answers: new Map(writes.map((write, i) => [write, answered[i] as Answer])), wallMs: performance.now() - started };
}

const count503 = (answers: Iterable<Answer>) => [...answers].filter((answer) => answer.status === 503).length;

async function w3(context: Context): Promise<BurstResult> {
  const title = 'two processes: 400 drawdowns over 40 limits at once, then 400 on one limit';
  context.log(`(w3) ${title}`);
  const { result, deadlocks: locked } = await deadlocksDuring(context, () =>
    withTwoServices(context, async (services) => {
      const spread = await burst(services, context.authorization, newWrites('w3s', 400, (i) => spreadLimit(i % 40)));
      const hot = await burst(services, context.authorization, newWrites('w3h', 400, () => HOT_LIMIT_UID));
      return { spread, hot };
    }),
  );
  const all = new Map([...result.spread.answers, ...result.hot.answers]);
  const money = await checkMoney(context.store, context.orgId, all);
  const spread503 = count503(result.spread.answers.values());
  const hot503 = count503(result.hot.answers.values());
  return {
    id: 'w3',
    title,
    lines: [
      `40 limits: ${summary([...result.spread.answers.values()], result.spread.wallMs)}`,
      `1 limit:   ${summary([...result.hot.answers.values()], result.hot.wallMs)}`,
      `deadlocks: ${locked}; ${describeMoney(money)}`,
    ],
    targets: [
      ['0 × 503', spread503 + hot503 === 0],
      ['money exact', moneyExact(money)],
    ],
  };
}

async function w4(context: Context): Promise<BurstResult> {
  const title = 'two processes: 30 Idempotency-Keys × 10 copies each, sent at once, copies alternating between the processes';
  context.log(`(w4) ${title}`);
  const keys = newWrites('w4', 30, (i) => spreadLimit(100 + (i % 10)));
  const copies = keys.flatMap((write) => Array.from({ length: 10 }, () => write));
  const { result, deadlocks: locked } = await deadlocksDuring(context, () =>
    withTwoServices(context, async (services) => {
      const started = performance.now();
      const answered = await Promise.all(copies.map((write, i) => postDrawdown((services[i % 2] as RunningService).url, context.authorization, write)));
      return { answered, wallMs: performance.now() - started };
    }),
  );
  // Per key, the answer that says what became of it: its 201 if a copy got one, else a replay, else the last copy's.
  const final = new Map<LogicalWrite, Answer>();
  for (const write of keys) {
    const answers = result.answered.filter((_, i) => copies[i] === write);
    const chosen = answers.find((answer) => answer.status === 201 && !answer.replayed) ?? answers.find((answer) => answer.replayed) ?? answers.at(-1);
    if (chosen) final.set(write, chosen);
  }
  const money = await checkMoney(context.store, context.orgId, final);
  const onlyFailures = keys.filter((write) => result.answered.every((answer, i) => copies[i] !== write || answer.status >= 500 || answer.status === 0)).length;
  const n503 = count503(result.answered);
  return {
    id: 'w4',
    title,
    lines: [
      `${summary(result.answered, result.wallMs)}`,
      `keys that got nothing but 503 or no answer: ${onlyFailures} of ${keys.length}`,
      `deadlocks: ${locked}; ${describeMoney(money)}`,
    ],
    targets: [
      ['0 deadlocks', locked === 0],
      ['0 × 503', n503 === 0],
      ['money exact', moneyExact(money)],
    ],
  };
}

async function w5(context: Context): Promise<BurstResult> {
  const title = 'two processes: 400 drawdowns over 40 limits, one process SIGKILLed mid-burst, every unanswered one retried with its key on the other';
  context.log(`(w5) ${title}`);
  const writes = newWrites('w5', 400, (i) => spreadLimit(200 + (i % 40)));
  const { result, deadlocks: locked } = await deadlocksDuring(context, () =>
    withTwoServices(context, async (services) => {
      const [victim, survivor] = services;
      let answeredSoFar = 0;
      let killed = false;
      const started = performance.now();
      // Killed once a quarter of the burst is answered: the rest of its share is in flight or queued in it.
      const answered = await Promise.all(
        writes.map(async (write, i) => {
          const answer = await postDrawdown((services[i % 2] as RunningService).url, context.authorization, write);
          answeredSoFar += 1;
          if (!killed && answeredSoFar >= writes.length / 4) {
            killed = true;
            context.log(`(w5) SIGKILL to process ${victim.pid} after ${answeredSoFar} answers`);
            process.kill(victim.pid, 'SIGKILL');
          }
          return answer;
        }),
      );
      const wallMs = performance.now() - started;
      const answers = new Map(writes.map((write, i) => [write, answered[i] as Answer]));
      const firstTally = tally(answered);
      const retried = await retryUntilFinal(survivor, context.authorization, answers);
      return { answers, firstTally, wallMs, retried, answeredBeforeKill: answered };
    }),
  );
  const money = await checkMoney(context.store, context.orgId, result.answers);
  const unfinished = [...result.answers.values()].filter((answer) => !isFinal(answer)).length;
  return {
    id: 'w5',
    title,
    lines: [
      `burst: ${summary(result.answeredBeforeKill, result.wallMs)}`,
      `after ${result.retried} retries on the surviving process: ${tally([...result.answers.values()])}; ${unfinished} still without a final answer`,
      `deadlocks: ${locked}; ${describeMoney(money)}`,
    ],
    targets: [
      ['0 lost, 0 duplicated', money.lost === 0 && money.duplicated === 0 && unfinished === 0],
      ['money exact', moneyExact(money)],
    ],
  };
}

async function w6(context: Context): Promise<BurstResult> {
  const title = `two processes: 800 drawdowns over 40 limits, 10 every 100 ms for 8 s, the database frozen (SIGSTOP) ${FREEZE_MS / 1000} s from the second second`;
  context.log(`(w6) ${title}`);
  const writes = newWrites('w6', 80 * 10, (i) => spreadLimit(300 + (i % 40)));
  const { result, deadlocks: locked } = await deadlocksDuring(context, () =>
    withTwoServices(context, async (services) => {
      const started = performance.now();
      const pending: Promise<Answer>[] = [];
      let frozen = false;
      let thawed = false;
      const thaw = async () => {
        await context.pg.signal('SIGCONT');
        thawed = true;
      };
      try {
        for (let tick = 0; tick < 80; tick += 1) {
          if (!frozen && performance.now() - started >= 1000) {
            await context.pg.signal('SIGSTOP');
            frozen = true;
          }
          if (frozen && !thawed && performance.now() - started >= 1000 + FREEZE_MS) await thaw();
          for (let j = 0; j < 10; j += 1) {
            const i = tick * 10 + j;
            pending.push(postDrawdown((services[i % 2] as RunningService).url, context.authorization, writes[i] as LogicalWrite));
          }
          await sleep(100);
        }
      } finally {
        if (frozen && !thawed) await thaw();
      }
      const answered = await Promise.all(pending);
      const wallMs = performance.now() - started;
      const answers = new Map(writes.map((write, i) => [write, answered[i] as Answer]));
      // Whatever was in flight has settled once every answer is in: what the ledger holds now is what ran.
      const lying = await lyingNothingRan(context.store, context.orgId, answers);
      const firstAnswers = [...answers.values()];
      const retried = await retryUntilFinal(services[0], context.authorization, answers);
      return { answers, firstAnswers, wallMs, lying, retried };
    }),
  );
  const money = await checkMoney(context.store, context.orgId, result.answers, result.lying.lying, result.lying.said);
  return {
    id: 'w6',
    title,
    lines: [
      `burst: ${summary(result.firstAnswers, result.wallMs)}`,
      `answered "nothing ran" (503 service_unavailable/overloaded): ${result.lying.said}, of which committed: ${result.lying.lying}`,
      `after ${result.retried} retries with their keys: ${tally([...result.answers.values()])}`,
      `deadlocks: ${locked}; ${describeMoney(money)}`,
    ],
    targets: [
      ['0 lying answers', result.lying.lying === 0],
      ['money exact', moneyExact(money)],
    ],
  };
}

function moneyExact(money: MoneyCheck): boolean {
  return money.limitsOff === 0 && money.missing201 === 0 && money.lost === 0 && money.duplicated === 0;
}

export function printBurstResults(results: readonly BurstResult[]): string[] {
  if (results.length === 0) return [];
  const lines = [
    '',
    'Bursts (w3–w6): drawdowns of 1.00 over HTTP to two `serve` processes (compiled, default settings) on a PostgreSQL the harness starts for itself (fsync on); each write has its own Idempotency-Key and reference, kept on retries. Answers: 201 / replay / 409 and 503 by code / no answer (connection failed).',
  ];
  for (const result of results) {
    const missed = result.targets.filter(([, met]) => !met).map(([label]) => label);
    const met = missed.length === 0 ? 'met' : `**not met**: ${missed.join('; ')}`;
    lines.push('', `(${result.id}) ${result.title} — targets ${result.targets.map(([label]) => label).join('; ')}: ${met}`);
    lines.push(...result.lines.map((line) => `  ${line}`));
  }
  return lines;
}
