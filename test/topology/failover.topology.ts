import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate } from '../../src/store/migrate.js';
import { PostgresStore } from '../../src/store/postgres-store.js';
import { StoreUnavailableError } from '../../src/store/store.js';
import { applyLedgerEntry } from '../../src/ledger/index.js';
import { anotherProcessLedger } from '../helpers/ledger.js';
import { runCli } from '../helpers/cli.js';
import { creditLimit, insertCreditLimits, insertPaymentMethods, paymentMethod } from '../helpers/records.js';
import type { SpawnedServer } from '../helpers/spawn-server.js';
import { postgresBinDir } from '../helpers/temp-postgres.js';
import { createTenant, type Tenant } from '../helpers/tenants.js';
import { createReplicationTopology, serveEachDatabase, type NodePerDatabase, type ReplicationTopology } from '../helpers/topology.js';
import { eventually, failures, sleep, startLoad, statusCounts, type LoadTarget } from './load.js';

const binDir = postgresBinDir();

// Faults are injected one after another on one topology: a standby stopped
// and restarted, the primary stopped and restarted, then the primary lost
// for good and the synchronous standby promoted.
describe.runIf(binDir)('faults in a primary + two standbys topology, under load', () => {
  let topology: ReplicationTopology;
  let tenant: Tenant;
  let onPrimary: SpawnedServer;
  let onSync: SpawnedServer;
  let onAsync: SpawnedServer;
  let nodes: NodePerDatabase | undefined;

  const READS = ['/api/methods/', '/api/methods/?page=2&currency=usd', '/api/methods/pm_3/', '/api/methods/?entity=ent_1'];
  const LIMIT_READS = ['/api/limits/', '/api/limits/cl_1/'];
  const target = (name: string, server: SpawnedServer, paths: readonly string[]): LoadTarget => ({
    name,
    baseUrl: server.url,
    paths,
    authorization: tenant.authorization,
  });
  const get = async (server: SpawnedServer, path: string) => {
    const response = await fetch(server.url + path, { headers: { authorization: tenant.authorization }, signal: AbortSignal.timeout(10_000) });
    return { status: response.status, retryAfter: response.headers.get('retry-after'), body: (await response.json()) as Record<string, unknown> };
  };

  beforeAll(async () => {
    topology = await createReplicationTopology(binDir ?? '');
    const store = new PostgresStore(topology.primary.url, { poolSize: 2 });
    await migrate(store);
    tenant = await createTenant(store);
    await insertPaymentMethods(
      store,
      tenant.org.id,
      Array.from({ length: 30 }, (_, i) => paymentMethod({ uid: `pm_${i}`, entity: `ent_${i % 4}`, currency: i % 2 ? 'USD' : 'EUR' })),
    );
    await insertCreditLimits(store, tenant.org.id, [creditLimit({ uid: 'cl_1', capacity: '1000.00' })]);
    await store.close();
    await topology.caughtUp();
    // No database time a request could outlast on a busy machine: the nodes whose database is healthy must answer
    // every read, and a stopped database refuses connections at once, so its node still answers 503 at once.
    nodes = await serveEachDatabase(topology, { DATABASE_REQUEST_BUDGET_MS: '0' });
    ({ onPrimary, onSync, onAsync } = nodes);
  });
  afterAll(async () => {
    await nodes?.stop();
    await topology?.destroy();
  });

  it('a standby stopped under load: its node answers 503 with Retry-After and recovers by itself; the other nodes are unaffected', async () => {
    const load = startLoad([
      target('primary', onPrimary, [...READS, ...LIMIT_READS]),
      target('sync', onSync, [...READS, ...LIMIT_READS]),
      target('async', onAsync, READS),
    ]);
    await sleep(1000);
    await topology.asyncReplica.stop();
    await sleep(3000);
    const during = statusCounts(load.tallies.get('async'));
    await topology.asyncReplica.start();
    await eventually(async () => (await get(onAsync, READS[0]!)).status === 200, 30_000, 'the node on the restarted standby answering');
    await sleep(1000);
    const tallies = await load.stop();

    console.log('standby stopped, answers per node:', Object.fromEntries([...tallies].map(([name, t]) => [name, statusCounts(t)])));
    expect(during['503'] ?? 0).toBeGreaterThan(0);
    expect(tallies.get('async')!.noRetryAfter).toBe(0);
    expect(failures(tallies.get('async'))).toBe(tallies.get('async')!.byStatus.get(503));
    expect({ primary: failures(tallies.get('primary')), sync: failures(tallies.get('sync')) }).toEqual({ primary: 0, sync: 0 });
  });

  it('the primary stopped under load: nodes on standbys keep answering reads (0 5xx), nodes on the primary answer 503 + Retry-After and recover by themselves; CLI writes fail fast', async () => {
    const load = startLoad([
      target('primary', onPrimary, [...READS, ...LIMIT_READS]),
      target('sync', onSync, [...READS, ...LIMIT_READS]),
      target('async', onAsync, READS),
    ]);
    await sleep(1000);
    await topology.primary.stop();
    await sleep(1000);
    const draw = await runCli(['draw', '--org', tenant.org.uid, '--limit', 'cl_1', '--amount', '10.00'], topology.primary.url);
    // The same write in process, timed without the CLI's start-up: it fails on the refused connection, without retrying.
    const writer = new PostgresStore(topology.primary.url, { poolSize: 1 });
    const started = Date.now();
    const inProcess = await applyLedgerEntry(anotherProcessLedger(writer), tenant.org.id, { kind: 'drawdown', id: 'dd_outage', limit: 'cl_1', amount: '10.00' }).catch(
      (error: unknown) => error,
    );
    const drawMs = Date.now() - started;
    await writer.close();
    await sleep(2000);
    const primaryDuring = statusCounts(load.tallies.get('primary'));
    await topology.primary.start();
    await eventually(async () => (await get(onPrimary, READS[0]!)).status === 200, 30_000, 'the node on the restarted primary answering');
    await sleep(1000);
    const tallies = await load.stop();

    console.log('primary stopped, answers per node:', Object.fromEntries([...tallies].map(([name, t]) => [name, statusCounts(t)])), `in-process draw failed after ${drawMs} ms`);
    expect(draw.code).not.toBe(0);
    expect(draw.stderr).toMatch(/the database at 127\.0\.0\.1:\d+\/\w+ as \w+ is unreachable/);
    expect(inProcess).toBeInstanceOf(StoreUnavailableError);
    // Fail fast: well within the 2 s connect timeout plus slack for a busy machine, not after retries.
    expect(drawMs).toBeLessThan(5000);
    expect(primaryDuring['503'] ?? 0).toBeGreaterThan(0);
    expect(tallies.get('primary')!.noRetryAfter).toBe(0);
    expect(failures(tallies.get('primary'))).toBe(tallies.get('primary')!.byStatus.get(503));
    expect({ sync: statusCounts(tallies.get('sync')), async: statusCounts(tallies.get('async')) }).toEqual({
      sync: { 200: expect.any(Number) },
      async: { 200: expect.any(Number) },
    });
  });

  it('the primary lost: the synchronous standby promoted with pg_ctl promote; the node on it sees writes made there and serves limits, no restart', async () => {
    // A write sent to a standby fails with a message that says so.
    const onStandby = await runCli(['draw', '--org', tenant.org.uid, '--limit', 'cl_1', '--amount', '1.00'], topology.asyncReplica.url);
    expect(onStandby.code).toBe(1);
    expect(onStandby.stderr).toMatch(/read-only standby .*against the primary/);
    await topology.primary.stop();
    expect((await get(onSync, '/api/limits/cl_1/')).body.outstanding).toBe(0);
    await topology.syncReplica.promote();
    const draw = await runCli(['draw', '--org', tenant.org.uid, '--limit', 'cl_1', '--amount', '123.45', '--json'], topology.syncReplica.url);
    expect(draw.code, draw.stderr).toBe(0);
    expect(await get(onSync, '/api/limits/cl_1/')).toMatchObject({ status: 200, body: { outstanding: 123.45, balance: 876.55 } });
    await eventually(async () => {
      const ready = (await (await fetch(`${onSync.url}/readyz`)).json()) as Record<string, unknown>;
      return ready.role === 'primary' && ready.serves_limits === true;
    }, 10_000, 'the promoted node reporting role primary');
    // The node on the old primary answers 503 + Retry-After while it is gone.
    expect(await get(onPrimary, '/api/methods/')).toMatchObject({ status: 503, retryAfter: '1' });
  });
});
