import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate } from '../../src/store/migrate.js';
import { PostgresStore } from '../../src/store/postgres-store.js';
import { postgresUrlWithSchema } from '../helpers/cli.js';
import { insertPaymentMethods, paymentMethod } from '../helpers/records.js';
import { redisAvailable, TEST_REDIS_URL } from '../helpers/redis.js';
import { spawnServer, type SpawnedServer } from '../helpers/spawn-server.js';
import { createTenant, type Tenant } from '../helpers/tenants.js';

const DATABASE_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const usable = /^postgres(ql)?:/.test(DATABASE_URL) && (await redisAvailable());

// Three service processes (as on three machines) share one Redis for rate
// limits. The key's counter lives under the key's own id, so this test
// touches only its own Redis key (deleted after) and never flushes anything.
describe.runIf(usable)('three service processes sharing one Redis', () => {
  const schema = `topology_${randomBytes(6).toString('hex')}`;
  let store: PostgresStore;
  let tenant: Tenant;
  let nodes: SpawnedServer[] = [];

  beforeAll(async () => {
    const admin = new PostgresStore(DATABASE_URL, { poolSize: 1 });
    await admin.query(`CREATE SCHEMA ${schema}`);
    await admin.close();
    store = new PostgresStore(DATABASE_URL, { poolSize: 2, searchPath: schema });
    await migrate(store);
    tenant = await createTenant(store);
    await insertPaymentMethods(store, tenant.org.id, [paymentMethod({ uid: 'pm_1' })]);
    const env = { DATABASE_URL: postgresUrlWithSchema(DATABASE_URL, schema), REDIS_URL: TEST_REDIS_URL, RATE_LIMIT_PER_MINUTE: '60', REDIS_TIMEOUT_MS: '5000' };
    nodes = await Promise.all([spawnServer([], env), spawnServer([], env), spawnServer([], env)]);
  });
  afterAll(async () => {
    for (const node of nodes) {
      node.child.kill('SIGTERM');
      await node.exited;
    }
    const redis = new Redis(TEST_REDIS_URL);
    await redis.del(`lending-api:rate-limit:key:${tenant.keyId}`).catch(() => {});
    redis.disconnect();
    await store?.query(`DROP SCHEMA ${schema} CASCADE`).catch(() => {});
    await store?.close();
  });

  it('holds 60 requests per minute per key in total, not per process: 90 requests spread over three nodes, 60 answered', async () => {
    const statuses: number[] = [];
    // Round robin, a few at a time, as a load balancer would spread them.
    for (let round = 0; round < 30; round += 1) {
      const answers = await Promise.all(
        nodes.map((node) => fetch(`${node.url}/api/methods/`, { headers: { authorization: tenant.authorization } })),
      );
      for (const answer of answers) {
        statuses.push(answer.status);
        await answer.arrayBuffer();
      }
    }
    const counted = (status: number) => statuses.filter((s) => s === status).length;
    expect({ ok: counted(200), limited: counted(429), other: statuses.length - counted(200) - counted(429) }).toEqual({
      ok: 60,
      limited: 30,
      other: 0,
    });
    // Every node refused some: the budget was spent across all three.
    const refusedBy = await Promise.all(
      nodes.map(async (node) => (await fetch(`${node.url}/api/methods/`, { headers: { authorization: tenant.authorization } })).status),
    );
    expect(refusedBy).toEqual([429, 429, 429]);
  });
});
