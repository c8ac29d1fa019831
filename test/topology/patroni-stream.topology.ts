import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LendingClient } from '../../packages/client/src/index.js';
import { migrate } from '../../src/store/migrate.js';
import { PostgresStore } from '../../src/store/postgres-store.js';
import { PATRONI_BINARIES, startPatroniCluster, waitFor, type ClusterMemberState, type PatroniCluster } from '../helpers/patroni-cluster.js';
import { spawnServer, type SpawnedServer } from '../helpers/spawn-server.js';
import { freePort, postgresBinDir } from '../helpers/temp-postgres.js';
import { allPublished, formatLag, lagOf, logOrder, seedLender, type Arrival, type Lender } from './event-topology-workload.js';
import { sleep } from './load.js';

const binDir = postgresBinDir();
/** A node's start on a busy 2-core machine (several starting at once): a hang, not slowness, should fail. */
const STARTUP_MS = 240_000;
const missing = PATRONI_BINARIES.filter((binary) => !existsSync(binary));
if (missing.length && process.env.CI) throw new Error(`CI needs ${missing.join(', ')} (apt-get install patroni etcd-server haproxy)`);
const available = binDir !== undefined && missing.length === 0;
const leaderOf = (state: readonly ClusterMemberState[]) => state.find((m) => m.role === 'leader')?.name;

/** Drawdowns one after another through `baseUrl`, each retried under its key until acknowledged; notes when each was. */
function startWriter(baseUrl: string, lender: Lender) {
  const acknowledged: { entryId: string; at: number }[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      const key = randomUUID();
      for (;;) {
        try {
          const response = await fetch(`${baseUrl}/api/limits/${lender.limitUid}/drawdowns/`, {
            method: 'POST',
            headers: { authorization: lender.tenant.authorization, 'content-type': 'application/json', 'idempotency-key': key },
            body: JSON.stringify({ amount: '1.00' }),
            signal: AbortSignal.timeout(15_000),
          });
          const body = await response.text();
          if (response.status === 201) {
            acknowledged.push({ entryId: (JSON.parse(body) as { entry: { id: string } }).entry.id, at: Date.now() });
            break;
          }
        } catch {
          // The node's answer lost: the same key again.
        }
        await sleep(100);
      }
      await sleep(20);
    }
  })();
  return {
    acknowledged,
    stop: async () => {
      running = false;
      await loop;
    },
  };
}

/**
 * An open stream across a Patroni failover (docs/scaling.md "Automatic
 * failover on Patroni"): the SDK's `client.events.stream()` on one node, the
 * writes on another, both through HAProxy's leader port; the leader's
 * PostgreSQL is SIGKILLed and the synchronous standby promoted
 * (synchronous_mode_strict, remote_apply: test/helpers/patroni-config.ts).
 * The stream resumes (a reconnect with Last-Event-ID, or its node's reads
 * reaching the new leader) and carries every event of the new leader's log
 * once, in order; every drawdown acknowledged before the failover has its
 * event among them.
 */
describe.runIf(available)('an event stream across a Patroni failover', () => {
  let cluster: PatroniCluster;
  const nodes: SpawnedServer[] = [];
  let lender: Lender;
  let readerPort = 0;
  const env = () => ({ DATABASE_URL: cluster.urls.primary, RATE_LIMIT_PER_MINUTE: '0', WRITE_RATE_LIMIT_PER_MINUTE: '0', LOG_LEVEL: 'error' });
  /** The node a stream is killed with: started again on the same port, as a restarted host would be. */
  const startReader = async () => {
    const node = await spawnServer(['--port', String(readerPort)], env(), STARTUP_MS);
    nodes.push(node);
    return node;
  };

  beforeAll(async () => {
    const log: string[] = [];
    try {
      cluster = await startPatroniCluster(binDir ?? '', (line) => {
        log.push(line);
        if (log.length > 500) log.splice(0, 100);
      });
      await cluster.healthy();
    } catch (error) {
      throw new Error(`${error instanceof Error ? error.message : String(error)}\n${log.slice(-80).join('\n')}`, { cause: error });
    }
    const store = new PostgresStore(cluster.urls.primary, { poolSize: 2 });
    await migrate(store);
    lender = await seedLender(store, 'Patroni Stream');
    readerPort = await freePort();
    nodes.push(await spawnServer([], env(), STARTUP_MS));
    await startReader();
    // The seed's events in the log (the nodes' sweep): the stream starts after them.
    await allPublished(store, lender.tenant.org.id);
    await store.close();
  });
  afterAll(async () => {
    for (const node of nodes) node.child.kill('SIGKILL');
    await Promise.all(nodes.map((node) => node.exited));
    await cluster?.destroy();
  });

  it('SDK streams resume after the leader is SIGKILLed: every event once, in order, none acknowledged before it missing', async () => {
    const [writer, reader] = nodes as [SpawnedServer, SpawnedServer];
    const stop = new AbortController();
    /** One stream on the writes' node (it survives), one on a node killed with the leader and started again. */
    const follow = (baseUrl: string) => {
      const client = new LendingClient({ baseUrl, organizationId: lender.tenant.org.uid, apiKey: lender.tenant.apiKey });
      const arrivals: Arrival[] = [];
      const reconnects: string[] = [];
      const done = (async () => {
        const stream = client.events.stream({}, { signal: stop.signal, maxReconnectDelayMs: 2000, onReconnect: ({ error }) => reconnects.push(String(error)) });
        for await (const event of stream) arrivals.push({ id: event.id, createdAt: event.created_at, at: Date.now() });
      })();
      return { arrivals, reconnects, done };
    };
    const streams = { survivor: follow(writer.url), restarted: follow(reader.url) };
    // The streams are open once a first event (a write's) arrives through each.
    const writes = startWriter(writer.url, lender);
    await waitFor(async () => Object.values(streams).every((stream) => stream.arrivals.length > 0), 60_000, 'the first event on each stream');
    await sleep(3000);
    const before = await cluster.healthy();
    const failedOverAt = Date.now();
    reader.child.kill('SIGKILL');
    await cluster.signalPostgres(leaderOf(before)!, 'SIGKILL');
    await waitFor(async () => leaderOf(await cluster.state()) !== leaderOf(before), 90_000, 'a new leader');
    await reader.exited;
    await cluster.healthy(180_000);
    await startReader();
    const acknowledgedByFailover = writes.acknowledged.filter((write) => write.at < failedOverAt).length;
    await waitFor(async () => writes.acknowledged.length > acknowledgedByFailover + 20, 90_000, 'writes acknowledged again');
    await sleep(2000);
    await writes.stop();

    const db = new PostgresStore(cluster.urls.primary, { poolSize: 2 });
    try {
      await allPublished(db, lender.tenant.org.id);
      const log = await logOrder(db, lender.tenant.org.id);
      const expectedOf = (arrivals: readonly Arrival[]) => log.slice(Math.max(0, log.indexOf(arrivals[0]!.id)));
      for (const stream of Object.values(streams)) {
        expect(log).toContain(stream.arrivals[0]!.id);
        const expected = expectedOf(stream.arrivals);
        await waitFor(async () => stream.arrivals.length >= expected.length, 120_000, () => `${expected.length} events on a stream (${stream.arrivals.length} so far)`);
      }
      await sleep(1000);
      stop.abort();
      await Promise.all(Object.values(streams).map((stream) => stream.done));
      for (const stream of Object.values(streams)) expect(stream.arrivals.map((arrival) => arrival.id)).toEqual(expectedOf(stream.arrivals));
      // The restarted node's stream came back by a reconnect (with Last-Event-ID: nothing missed or repeated, above).
      expect(streams.restarted.reconnects.length).toBeGreaterThan(0);
      // An event acknowledged to the writer before the failover is on both streams (and on the new leader).
      const acknowledgedBefore = writes.acknowledged.slice(0, acknowledgedByFailover).map((write) => write.entryId);
      const rows = await db.query<{ uid: string }>(
        `SELECT uid FROM events WHERE org_id = $1 AND type = 'ledger_entry.created' AND object_uid = ANY($2::text[])`,
        [lender.tenant.org.id, acknowledgedBefore],
      );
      expect(rows.length).toBe(acknowledgedBefore.length);
      for (const stream of Object.values(streams)) {
        const streamed = new Set(stream.arrivals.map((arrival) => arrival.id));
        expect(rows.filter((row) => !streamed.has(row.uid))).toEqual([]);
      }
      const describe = (stream: (typeof streams)['survivor']) =>
        `${stream.arrivals.length} events, reconnects ${stream.reconnects.length} (${[...new Set(stream.reconnects)].join('; ').slice(0, 200)}), ` +
        `lag before the failover ${formatLag(lagOf(stream.arrivals.filter((arrival) => arrival.at < failedOverAt)))}`;
      console.log(
        `Patroni failover (leader SIGKILLed) under open SDK streams: ${acknowledgedBefore.length} drawdowns acknowledged before it, ${writes.acknowledged.length - acknowledgedByFailover} after; ` +
          `the writes' node's stream: ${describe(streams.survivor)}; the stream of the node killed with the leader: ${describe(streams.restarted)}`,
      );
    } finally {
      stop.abort();
      await db.close();
    }
  });
});
