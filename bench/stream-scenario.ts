/**
 * estream (issue 47, docs/webhooks.md "the stream"): `GET /api/events/stream/`
 * of a service started as production runs it (bench/service.ts), on PostgreSQL.
 *
 * - catch-up: one stream reads `bench_stream`'s log of CATCH_UP_EVENTS events
 *   (imported once, kept) from `created_from`: events per second from the
 *   request to its last event, the median of CATCH_UP_ROUNDS, with the
 *   service's CPU per event. Target ≥ 10,000/s.
 * - live lag: a stream open on `bench_writes` while drawdowns go through the
 *   same service at LIVE_PER_SECOND: each event's lag from its `created_at`
 *   (PostgreSQL's clock, on this machine) to its arrival here. Target p99 ≤ 100 ms.
 * - idle streams: the service's RSS with IDLE_STREAMS open and idle, minus its
 *   RSS before them. A key has at most 4 streams open on a node, so the run
 *   creates IDLE_STREAMS / 4 read keys of `bench_stream` (new ones each run).
 *   Target ≤ 50 MiB.
 *
 *   npm run bench -- --only estream      (DATABASE_URL=postgres://… or the local `lending_bench`)
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import http from 'node:http';
import { Readable } from 'node:stream';
import { createApiKey } from '../src/auth/api-keys.js';
import { publishAllEvents } from '../src/events/publish-events.js';
import { importJsonl } from '../src/import/index.js';
import { createOrganization, findOrganization } from '../src/organizations/organizations.js';
import { migrate } from '../src/store/migrate.js';
import { PostgresStore } from '../src/store/postgres-store.js';
import { percentile } from './burst-client.js';
import { benchDatabaseUrl, vacuumWrittenTables } from './database.js';
import { publishBacklog } from './load.js';
import { writeBenchRecord, type MeasuredRow } from './results-record.js';
import { startService, type RunningService } from './service.js';
import { ensureWriteLimits, SPREAD_LIMITS, WRITES_ORG_UID } from './write-scenarios.js';

export const STREAM_SCENARIO_ID = 'estream';
const STREAM_ORG_UID = 'bench_stream';
const CATCH_UP_EVENTS = 40_000;
const CATCH_UP_TARGET = 10_000;
const CATCH_UP_ROUNDS = 3;
/** After the writes, how long the stream may stay silent before its count is final. */
const SETTLE_MS = 2000;
const LIVE_PER_SECOND = 20;
const LIVE_SECONDS = 20;
const LAG_TARGET_MS = 100;
const IDLE_STREAMS = 1000;
const STREAMS_PER_KEY = 4;
const RSS_TARGET_MIB = 50;
/** Idle streams open this many at a time. */
const OPEN_BATCH = 50;
const WAIT_MS = 120_000;

interface OpenStream {
  /** Resolves when the stream's first block (the event it starts after) has arrived. */
  readonly started: Promise<void>;
  close(): void;
}

export async function runStreamScenario(log: (line: string) => void, logLevel: string): Promise<string[]> {
  const databaseUrl = await benchDatabaseUrl();
  const store = new PostgresStore(databaseUrl, { poolSize: 4 });
  const rows: MeasuredRow[] = [];
  const lines: string[] = [];
  let service: RunningService | undefined;
  try {
    await migrate(store);
    // The service would otherwise publish the dataset's pending events during the measurements.
    await publishBacklog(store, log);
    await ensureWriteLimits(store);
    const logged = await streamLog(store, log);
    log(`(estream) creating ${IDLE_STREAMS / STREAMS_PER_KEY} read keys of ${STREAM_ORG_UID} (${STREAMS_PER_KEY} streams a key at most)`);
    const readKeys: string[] = [];
    for (let i = 0; i < IDLE_STREAMS / STREAMS_PER_KEY; i += 1) readKeys.push(basic(STREAM_ORG_UID, (await createApiKey(store, STREAM_ORG_UID)).key));
    const writeKey = basic(WRITES_ORG_UID, (await createApiKey(store, WRITES_ORG_UID, undefined, 'write')).key);
    const writesReadKey = basic(WRITES_ORG_UID, (await createApiKey(store, WRITES_ORG_UID)).key);
    await vacuumWrittenTables(store);
    service = await startService({ DATABASE_URL: databaseUrl, RATE_LIMIT_PER_MINUTE: '0', WRITE_RATE_LIMIT_PER_MINUTE: '0', LOG_LEVEL: logLevel });
    const url = service.url;

    // Idle streams first, on a service that has only warmed up: its RSS grows with what it has served.
    const warm = openStream(url, readKeys[0]!, '', () => {});
    await warm.started;
    warm.close();
    await sleep(2000);
    const rssBefore = await rssMiB(service.pid);
    log(`(estream) opening ${IDLE_STREAMS} idle streams, ${OPEN_BATCH} at a time`);
    const idle: OpenStream[] = [];
    for (let i = 0; i < IDLE_STREAMS; i += OPEN_BATCH) {
      const batch = Array.from({ length: OPEN_BATCH }, (_, j) => openStream(url, readKeys[Math.floor((i + j) / STREAMS_PER_KEY)]!, '', () => {}));
      idle.push(...batch);
      await Promise.all(batch.map((stream) => stream.started));
    }
    await sleep(5000);
    const rssOpen = await rssMiB(service.pid);
    for (const stream of idle) stream.close();
    const growth = rssOpen - rssBefore;
    rows.push({ id: 'estream-idle', title: `service RSS growth with ${IDLE_STREAMS} idle event streams open, MiB (in perSecond)`, connections: IDLE_STREAMS, service: { perSecond: growth, p50: NaN, p99: NaN, failures: 0 } });
    lines.push(
      `(estream) ${IDLE_STREAMS} idle streams: service RSS ${rssBefore.toFixed(1)} MiB before, ${rssOpen.toFixed(1)} MiB with them open: ` +
        `+${growth.toFixed(1)} MiB, ${((growth * 1024) / IDLE_STREAMS).toFixed(1)} KiB a stream (target ≤ ${RSS_TARGET_MIB} MiB ${growth <= RSS_TARGET_MIB ? '✓ met' : '✗ not met'})`,
    );
    await sleep(2000);

    log(`(estream) one stream reads ${STREAM_ORG_UID}'s ${logged} events from created_from, ${CATCH_UP_ROUNDS} times`);
    const rounds: { rate: number; firstMs: number; cpuUs: number }[] = [];
    for (let round = 0; round < CATCH_UP_ROUNDS; round += 1) {
      const cpuBefore = await service.cpuSeconds();
      const catchUp = await catchUpRun(url, readKeys[0]!, logged);
      rounds.push({ rate: logged / catchUp.seconds, firstMs: catchUp.firstMs, cpuUs: ((await service.cpuSeconds()) - cpuBefore) * 1e6 / logged });
    }
    const median = [...rounds].sort((a, b) => a.rate - b.rate)[Math.floor(CATCH_UP_ROUNDS / 2)]!;
    rows.push({ id: 'estream-catchup', title: `one event stream reading a log of ${logged} events from created_from, events/s (median of ${CATCH_UP_ROUNDS})`, connections: 1, service: { perSecond: median.rate, p50: NaN, p99: NaN, failures: 0, cpuUs: median.cpuUs } });
    lines.push(
      `(estream) catch-up of ${logged} events, ${CATCH_UP_ROUNDS} rounds: ${rounds.map((r) => `${r.rate.toFixed(0)}/s (${r.cpuUs.toFixed(1)} µs service CPU an event, first after ${r.firstMs.toFixed(0)} ms)`).join(', ')}; ` +
        `median ${median.rate.toFixed(0)} events/s (target ≥ ${CATCH_UP_TARGET.toLocaleString('en-US')}/s ${median.rate >= CATCH_UP_TARGET ? '✓ met' : '✗ not met'})`,
    );

    log(`(estream) drawdowns at ${LIVE_PER_SECOND}/s for ${LIVE_SECONDS} s through the service, one stream open on ${WRITES_ORG_UID}`);
    const live = await liveRun(url, writeKey, writesReadKey);
    const [p50, p99] = [percentile([...live.lags], 50), percentile([...live.lags], 99)];
    rows.push({ id: 'estream-lag', title: `event stream lag from created_at, drawdowns at ${LIVE_PER_SECOND}/s through the same service`, connections: 1, service: { perSecond: live.lags.length / LIVE_SECONDS, p50, p99, failures: live.failures } });
    lines.push(
      `(estream) live: ${live.written} drawdowns (${live.failures} not 201), ${live.lags.length} events arrived: lag from created_at p50 ${p50.toFixed(1)} ms, ` +
        `p99 ${p99.toFixed(1)} ms, max ${Math.max(...live.lags).toFixed(1)} ms (target p99 ≤ ${LAG_TARGET_MS} ms ${p99 <= LAG_TARGET_MS ? '✓ met' : '✗ not met'})`,
    );
  } finally {
    await service?.stop();
    await store.close();
  }
  lines.push(`record of this run: ${await writeBenchRecord({ rows, database: 'PostgreSQL (DATABASE_URL or the local lending_bench)' })}`);
  return lines;
}

/** `bench_stream`'s log: CATCH_UP_EVENTS entity events, imported by the first run and kept. */
async function streamLog(store: PostgresStore, log: (line: string) => void): Promise<number> {
  const org = (await findOrganization(store, STREAM_ORG_UID)) ?? (await createOrganization(store, 'Bench stream', STREAM_ORG_UID));
  const count = async () => Number((await store.query<{ n: string }>('SELECT count(*)::text AS n FROM events WHERE org_id = $1', [org.id]))[0]?.n);
  const have = await count();
  if (have < CATCH_UP_EVENTS) {
    log(`(estream) importing ${CATCH_UP_EVENTS - have} entities into ${STREAM_ORG_UID} for its log (once: later runs keep it)`);
    const run = randomBytes(4).toString('hex');
    const lines = Array.from({ length: CATCH_UP_EVENTS - have }, (_, i) => `${JSON.stringify({ object: 'entity', uid: `ent_stream_${run}_${i}`, name: `Borrower ${i}`, country: 'US' })}\n`);
    await importJsonl(store, STREAM_ORG_UID, Readable.from(lines));
    await publishAllEvents(store, org.id, 5000);
  }
  return count();
}

async function catchUpRun(url: string, key: string, expected: number): Promise<{ seconds: number; firstMs: number }> {
  const sent = performance.now();
  let seen = 0;
  let firstAt: number | undefined;
  let resolveDone!: () => void;
  const done = new Promise<void>((resolve) => (resolveDone = resolve));
  let carry = '';
  const stream = openStream(url, key, '?created_from=2000-01-01T00:00:00Z', (text) => {
    // Counts `data:` lines without parsing them: the bench must not be the bottleneck.
    const chunk = carry + text;
    let at = chunk.indexOf('\ndata: ');
    while (at !== -1) {
      seen += 1;
      at = chunk.indexOf('\ndata: ', at + 1);
    }
    carry = chunk.slice(-6);
    firstAt ??= seen > 0 ? performance.now() : undefined;
    if (seen >= expected) resolveDone();
  });
  try {
    await withTimeout(done, () => `(estream) catch-up read ${seen} of ${expected} events in ${WAIT_MS / 1000} s`);
    return { seconds: (performance.now() - sent) / 1000, firstMs: (firstAt ?? NaN) - sent };
  } finally {
    stream.close();
  }
}

async function liveRun(url: string, writeKey: string, readKey: string): Promise<{ lags: number[]; written: number; failures: number }> {
  const lags: number[] = [];
  let buffer = '';
  const stream = openStream(url, readKey, '', (text) => {
    const arrived = performance.timeOrigin + performance.now();
    buffer += text;
    const blocks = buffer.split('\n\n');
    buffer = blocks.pop() ?? '';
    for (const block of blocks) {
      const data = block.split('\n').find((line) => line.startsWith('data: '));
      if (!data) continue;
      const createdAt = (JSON.parse(data.slice(6)) as { created_at: string }).created_at;
      // µs in the text; Date.parse keeps ms: add the rest.
      lags.push(arrived - (Date.parse(createdAt) + Number(`0.${createdAt.slice(23, 26)}`)));
    }
  });
  try {
    await stream.started;
    let failures = 0;
    const writes: Promise<void>[] = [];
    const start = performance.now();
    const total = LIVE_PER_SECOND * LIVE_SECONDS;
    for (let i = 0; i < total; i += 1) {
      await sleep(start + (i * 1000) / LIVE_PER_SECOND - performance.now());
      writes.push(drawdown(url, writeKey, i).then((status) => void (status === 201 || (failures += 1))));
    }
    await Promise.all(writes);
    // A drawdown publishes more than one event: every event that arrives counts, until the stream is quiet.
    const written = total - failures;
    await withTimeout(
      (async () => {
        let seen = -1;
        while (lags.length < written || seen !== lags.length) {
          seen = lags.length;
          await sleep(SETTLE_MS);
        }
      })(),
      () => `(estream) ${lags.length} events on the stream for ${written} drawdowns after ${WAIT_MS / 1000} s`,
    );
    return { lags, written: total, failures };
  } finally {
    stream.close();
  }
}

async function drawdown(url: string, key: string, i: number): Promise<number> {
  try {
    const response = await fetch(`${url}/api/limits/cl_bench_w_${i % SPREAD_LIMITS}/drawdowns/`, {
      method: 'POST',
      headers: { authorization: key, 'content-type': 'application/json', 'idempotency-key': randomUUID() },
      body: '{"amount":"0.01"}',
    });
    await response.arrayBuffer();
    return response.status;
  } catch {
    return 0;
  }
}

/** A stream on a connection of its own; `onText` gets what arrives after the answer's head. */
function openStream(url: string, key: string, query: string, onText: (text: string) => void): OpenStream {
  let request: http.ClientRequest | undefined;
  const started = new Promise<void>((resolve, reject) => {
    request = http.get(`${url}/api/events/stream/${query}`, { agent: false, headers: { authorization: key, accept: 'text/event-stream' } }, (response) => {
      if (response.statusCode !== 200) {
        response.resume();
        reject(new Error(`(estream) the stream answered ${response.statusCode}`));
        return;
      }
      response.setEncoding('utf8');
      let head = true;
      response.on('data', (text: string) => {
        if (head && text.includes('\n\n')) {
          head = false;
          resolve();
        }
        onText(text);
      });
      response.on('error', () => {});
    });
    request.on('error', (error) => reject(error));
  });
  started.catch(() => {});
  return { started, close: () => request?.destroy() };
}

async function rssMiB(pid: number): Promise<number> {
  const match = /VmRSS:\s+(\d+) kB/.exec(await readFile(`/proc/${pid}/status`, 'utf8'));
  return match?.[1] ? Number(match[1]) / 1024 : NaN;
}

async function withTimeout(work: Promise<void>, message: () => string): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(message())), WAIT_MS)));
  try {
    await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
}

function basic(orgUid: string, key: string): string {
  return `Basic ${Buffer.from(`${orgUid}:${key}`).toString('base64')}`;
}
