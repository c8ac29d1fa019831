import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyLedgerEntry } from '../../src/ledger/index.js';
import { ledgerOf } from '../helpers/ledger.js';
import { migrate } from '../../src/store/migrate.js';
import { PostgresStore } from '../../src/store/postgres-store.js';
import { creditLimit, insertCreditLimits, insertPaymentMethods, paymentMethod } from '../helpers/records.js';
import type { SpawnedServer } from '../helpers/spawn-server.js';
import { postgresBinDir } from '../helpers/temp-postgres.js';
import { createTenant, type Tenant } from '../helpers/tenants.js';
import { createReplicationTopology, serveEachDatabase, type NodePerDatabase, type ReplicationTopology } from '../helpers/topology.js';

const binDir = postgresBinDir();
const PUBLIC_URL = 'https://lending.example';

describe.runIf(binDir)('serve on a primary, a synchronous standby and an asynchronous standby', () => {
  let topology: ReplicationTopology;
  let primaryStore: PostgresStore;
  let tenant: Tenant;
  let onPrimary: SpawnedServer;
  let onSync: SpawnedServer;
  let onAsync: SpawnedServer;
  let nodes: NodePerDatabase | undefined;

  beforeAll(async () => {
    topology = await createReplicationTopology(binDir ?? '');
    primaryStore = new PostgresStore(topology.primary.url, { poolSize: 4 });
    await migrate(primaryStore);
    tenant = await createTenant(primaryStore);
    const day = (n: number) => new Date(Date.UTC(2025, 0, 1 + n)).toISOString();
    await insertPaymentMethods(
      primaryStore,
      tenant.org.id,
      Array.from({ length: 27 }, (_, i) =>
        paymentMethod({ uid: `pm_${i}`, entity: `ent_${i % 4}`, currency: i % 3 ? 'USD' : 'EUR', created_at: day(i), updated_at: day(40 - i) }),
      ),
    );
    await insertCreditLimits(
      primaryStore,
      tenant.org.id,
      Array.from({ length: 23 }, (_, i) => creditLimit({ uid: `cl_${i}`, entity: `ent_${i % 3}`, capacity: String(1000 + i * 100) + '.00', created_at: day(i) })),
    );
    await topology.caughtUp();
    nodes = await serveEachDatabase(topology, { PUBLIC_URL });
    ({ onPrimary, onSync, onAsync } = nodes);
  });
  afterAll(async () => {
    await nodes?.stop();
    await primaryStore?.close();
    await topology?.destroy();
  });

  const get = async (server: SpawnedServer, path: string) => {
    const response = await fetch(server.url + path, { headers: { authorization: tenant.authorization } });
    return { status: response.status, retryAfter: response.headers.get('retry-after'), body: (await response.json()) as Record<string, unknown> };
  };

  const METHOD_PAGES = [
    '/api/methods/',
    '/api/methods/?page=2',
    '/api/methods/?page=3',
    '/api/methods/?currency=usd&order_by=-updated_at',
    '/api/methods/?entity=ent_1&page=1',
    '/api/methods/?created_from=2025-01-05T00:00:00Z&order_by=entity&page=2',
    '/api/methods/pm_3/',
    '/api/methods/pm_missing/',
  ];
  const LIMIT_PAGES = ['/api/limits/', '/api/limits/?page=3', '/api/limits/?order_by=-capacity&entity=ent_2', '/api/limits/cl_4/'];

  it('answers the same payment-method pages from either standby as from the primary (nothing on the request path writes)', async () => {
    for (const path of METHOD_PAGES) {
      const expected = await get(onPrimary, path);
      expect(expected.status, path).toBeLessThan(500);
      for (const replica of [onSync, onAsync]) {
        const actual = await get(replica, path);
        expect({ path, status: actual.status, body: { ...actual.body, request_id: undefined } }).toEqual({
          path,
          status: expected.status,
          body: { ...expected.body, request_id: undefined },
        });
      }
    }
    // Asked again (list cache and auth cache warm): still the same.
    expect((await get(onSync, METHOD_PAGES[1]!)).body).toEqual((await get(onPrimary, METHOD_PAGES[1]!)).body);
  });

  it('answers the same credit-limit pages from the synchronous standby; the asynchronous one refuses them with 503', async () => {
    for (const path of LIMIT_PAGES) {
      const expected = await get(onPrimary, path);
      expect(expected.status).toBe(200);
      expect(await get(onSync, path)).toEqual(expected);
      const refused = await get(onAsync, path);
      expect(refused).toMatchObject({ status: 503, retryAfter: '1', body: { code: 'service_unavailable' } });
      expect(refused.body.detail).toMatch(/replica that is not guaranteed to be up to date/);
    }
    // The guard runs after authentication: no credentials is still 401, not 503.
    expect((await fetch(`${onAsync.url}/api/limits/`)).status).toBe(401);
  });

  it('says on /readyz which database each node reads, its lag, and whether it serves limits', async () => {
    const ready = async (server: SpawnedServer) => (await (await fetch(`${server.url}/readyz`)).json()) as Record<string, unknown>;
    expect(await ready(onPrimary)).toEqual({
      status: 'ready',
      database: 'reachable',
      role: 'primary',
      serves_limits: true,
      lag_bytes: null,
      lag_seconds: null,
      wal_receiver: null,
    });
    expect(await ready(onSync)).toMatchObject({ role: 'replica', serves_limits: true, wal_receiver: 'streaming', lag_bytes: expect.any(Number) });
    expect(await ready(onAsync)).toMatchObject({ role: 'replica', serves_limits: false, wal_receiver: 'streaming' });
  });

  it('shows every drawdown on the synchronous standby at once: 1,000 drawdowns, each read right after, 0 stale', async () => {
    const DRAWS = 1000;
    let stale = 0;
    let asyncAnswered = 0;
    for (let i = 0; i < DRAWS; i += 1) {
      const limit = `cl_${i % 20}`;
      const recorded = await applyLedgerEntry(ledgerOf(primaryStore), tenant.org.id, { kind: 'drawdown', id: `dd_${i}`, limit, amount: '0.25' });
      const read = await get(onSync, `/api/limits/${limit}/`);
      expect(read.status).toBe(200);
      if (String(read.body.outstanding) !== String(Number(recorded.outstanding))) stale += 1;
      if (i % 50 === 0) {
        const refused = await get(onAsync, `/api/limits/${limit}/`);
        if (refused.status !== 503) asyncAnswered += 1;
      }
    }
    expect({ stale, asyncAnswered }).toEqual({ stale: 0, asyncAnswered: 0 });
  });
});
