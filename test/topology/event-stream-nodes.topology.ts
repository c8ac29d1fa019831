import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate } from '../../src/store/migrate.js';
import { PostgresStore } from '../../src/store/postgres-store.js';
import { spawnServer, type SpawnedServer } from '../helpers/spawn-server.js';
import { SseReader } from '../helpers/sse.js';
import { createTempPostgres, postgresBinDir, type TempPostgres } from '../helpers/temp-postgres.js';
import { startPgBouncer, type PgBouncer } from '../helpers/topology.js';
import { allPublished, follow, formatLag, lagOf, logOrder, seedLender, writeMix, type Lender } from './event-topology-workload.js';

const binDir = postgresBinDir();
/** A node's start on a busy 2-core machine (several starting at once): a hang, not slowness, should fail. */
const STARTUP_MS = 240_000;
const MIX = { drawdowns: 120, loans: 30, imported: 80, concurrency: 4 };

/**
 * `GET /api/events/stream/` on one node while other processes write: node 2
 * (drawdowns and loans over HTTP) and an import (the CLI's code, from this
 * process). The reader's node hears of those publications only by its poll of
 * `event_streams` (EventStreamWakeups): directly, and through PgBouncer in
 * transaction mode, where a LISTEN would not pass. Each stream must carry
 * every event committed after it opened, once, in the log's order; the lag
 * from publication to arrival is printed (docs/scaling.md "Events and webhooks").
 */
describe.runIf(binDir)('the event stream across nodes and through PgBouncer', () => {
  let pg: TempPostgres;
  let store: PostgresStore;
  let bouncer: PgBouncer;
  const nodes: SpawnedServer[] = [];
  let reader1: SpawnedServer;
  let writer: SpawnedServer;
  let bounced: SpawnedServer;

  beforeAll(async () => {
    pg = await createTempPostgres(binDir ?? '', { settings: { max_connections: 100 } });
    store = new PostgresStore(pg.url, { poolSize: 3 });
    await migrate(store);
    bouncer = await startPgBouncer({ port: Number(new URL(pg.url).port) }, 'transaction');
    const env = { RATE_LIMIT_PER_MINUTE: '0', WRITE_RATE_LIMIT_PER_MINUTE: '0', DATABASE_POOL_SIZE: '6', LOG_LEVEL: 'warn' };
    [reader1, writer, bounced] = await Promise.all([
      spawnServer([], { ...env, DATABASE_URL: pg.url }, STARTUP_MS),
      spawnServer([], { ...env, DATABASE_URL: pg.url }, STARTUP_MS),
      spawnServer([], { ...env, DATABASE_URL: bouncer.url(), DATABASE_PREPARED_STATEMENTS: 'false' }, STARTUP_MS),
    ]);
    nodes.push(reader1, writer, bounced);
  });
  afterAll(async () => {
    for (const node of nodes) node.child.kill('SIGTERM');
    await Promise.all(nodes.map((node) => node.exited));
    await store?.close();
    await bouncer?.destroy();
    await pg?.destroy();
  });

  /** Opens the stream on `on` once the lender's seed is in the log, writes the mix on `writeTo`, reads until the log's end. */
  async function streamWhileWriting(on: SpawnedServer, writeTo: readonly SpawnedServer[], name: string) {
    const lender: Lender = await seedLender(store, name);
    await allPublished(store, lender.tenant.org.id);
    const before = new Set(await logOrder(store, lender.tenant.org.id));
    const reader = await SseReader.open(`${on.url}/api/events/stream/`, { authorization: lender.tenant.authorization });
    expect(reader.response.status).toBe(200);
    const stream = follow(reader);
    await writeMix(store, writeTo.map((node) => node.url), lender, MIX);
    const writesEndedAt = Date.now();
    await allPublished(store, lender.tenant.org.id);
    const expected = (await logOrder(store, lender.tenant.org.id)).filter((id) => !before.has(id));
    await stream.until(expected.length);
    // A moment more: an event sent twice, or one that was not committed, would arrive now.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    await stream.stop();
    // Live: events reached the reader while the writes were still going on, not only once they stopped.
    expect(stream.arrivals.filter((arrival) => arrival.at < writesEndedAt).length).toBeGreaterThan(0);
    return { expected, arrivals: stream.arrivals, lender };
  }

  it('a reader on node 1 gets every event written through node 2 and by an import, once each, in order, live', async () => {
    const { expected, arrivals } = await streamWhileWriting(reader1, [writer], 'Stream Across Nodes');
    // Drawdowns: a limit update and an entry each; loans: the loan, the limit and the entry; imports: an entry each.
    expect(expected.length).toBeGreaterThanOrEqual(2 * MIX.drawdowns + 3 * MIX.loans + MIX.imported);
    expect(arrivals.map((arrival) => arrival.id)).toEqual(expected);
    console.log(`stream across nodes (reader on node 1, writes on node 2 and an import): ${formatLag(lagOf(arrivals))}`);
  });

  it('through PgBouncer in transaction mode the poll of event_streams wakes the stream: every event once, in order', async () => {
    // The reader's node reaches the database only through PgBouncer (transaction mode, no prepared statements); the
    // writes go to the other nodes, so only its poll (every 50 ms) can tell it that something was published.
    const { expected, arrivals } = await streamWhileWriting(bounced, [writer, reader1], 'Stream Through PgBouncer');
    expect(arrivals.map((arrival) => arrival.id)).toEqual(expected);
    console.log(`stream through PgBouncer (transaction mode), writes on two direct nodes and an import: ${formatLag(lagOf(arrivals))}`);
  });

  it('a reader through PgBouncer of the node that writes, and one of another node, both read the same log', async () => {
    const lender = await seedLender(store, 'Two Readers');
    await allPublished(store, lender.tenant.org.id);
    const before = new Set(await logOrder(store, lender.tenant.org.id));
    const streams = await Promise.all(
      [bounced, reader1].map(async (node) => follow(await SseReader.open(`${node.url}/api/events/stream/`, { authorization: lender.tenant.authorization }))),
    );
    await writeMix(store, [bounced.url], lender, { drawdowns: 60, loans: 10, imported: 20, concurrency: 3 });
    await allPublished(store, lender.tenant.org.id);
    const expected = (await logOrder(store, lender.tenant.org.id)).filter((id) => !before.has(id));
    await Promise.all(streams.map((stream) => stream.until(expected.length)));
    await new Promise((resolve) => setTimeout(resolve, 1000));
    await Promise.all(streams.map((stream) => stream.stop()));
    for (const stream of streams) expect(stream.arrivals.map((arrival) => arrival.id)).toEqual(expected);
    console.log(`writes through PgBouncer's node: its own reader ${formatLag(lagOf(streams[0]!.arrivals))}; node 1's ${formatLag(lagOf(streams[1]!.arrivals))}`);
  });
});
