import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { buildApp } from '../helpers/app.js';
import type { Store } from '../../src/store/store.js';
import { creditLimit, insertCreditLimits } from '../helpers/records.js';
import { describeEachStore, openPostgresTestStore } from '../helpers/stores.js';
import { createTenant, type Tenant } from '../helpers/tenants.js';
import { unreachableStore } from '../helpers/unreachable-store.js';
import { postEntry } from '../helpers/writes.js';
import { sampleOf } from './metric-text.js';

const problems = (code: string) => `lending_api_problem_responses_total{code="${code}"}`;

async function newLimits(store: Store, writer: Tenant, count: number, capacity = '1000.00'): Promise<string[]> {
  const limits = Array.from({ length: count }, () => creditLimit({ capacity }));
  await insertCreditLimits(store, writer.org.id, limits);
  return limits.map((limit) => limit.uid);
}

describeEachStore('problem answers by code', (store) => {
  it('counts each problem answer by its code, whichever part of the service answered it, every code exported from the start', async () => {
    const registry = new Registry();
    // A queue that refuses a write whenever another is ahead of it: overloaded answers without a slow database.
    const app: FastifyInstance = await buildApp({ store: store(), metrics: registry, writeQueue: { maxWaitMs: 1, concurrency: 1 } });
    try {
      expect(await sampleOf(registry, problems('overloaded'))).toBe(0);
      expect(await sampleOf(registry, problems('outcome_unknown'))).toBe(0);
      const reader = await createTenant(store());
      const writer = await createTenant(store(), 'Writer', 'write');

      expect((await app.inject({ url: '/api/methods/' })).statusCode).toBe(401);
      expect((await app.inject({ url: '/api/methods/pm_absent/', headers: { authorization: reader.authorization } })).statusCode).toBe(404);
      expect((await app.inject({ url: '/nowhere' })).statusCode).toBe(404);
      // Refused by the ledger and stored under its key, then replayed: answers that never pass the error handler.
      // The queue refuses a write that waited over 1 ms (overloaded, nothing ran): on a busy machine even a lone
      // one may, so each is sent again until it is answered, and every refusal is counted.
      let overloaded = 0;
      const [small] = await newLimits(store(), writer, 1, '10.00');
      const key = randomUUID();
      const drawTooMuch = async () => {
        for (;;) {
          const answer = await postEntry(app, 'drawdown', small ?? '', { amount: '50.00' }, { authorization: writer.authorization, idempotencyKey: key });
          if (answer.statusCode !== 503 || answer.json<{ code: string }>().code !== 'overloaded') return answer.statusCode;
          overloaded += 1;
        }
      };
      expect(await drawTooMuch()).toBe(409);
      expect(await drawTooMuch()).toBe(409);

      const beforeBursts = overloaded;
      for (let round = 0; round < 20 && overloaded === beforeBursts; round += 1) {
        const limits = await newLimits(store(), writer, 12);
        const answers = await Promise.all(limits.map((uid) => postEntry(app, 'drawdown', uid, { amount: '1.00' }, { authorization: writer.authorization })));
        overloaded += answers.filter((answer) => answer.statusCode === 503 && answer.json<{ code: string }>().code === 'overloaded').length;
      }
      expect(overloaded).toBeGreaterThan(beforeBursts);

      expect(await sampleOf(registry, problems('unauthorized'))).toBe(1);
      expect(await sampleOf(registry, problems('not_found'))).toBe(2);
      expect(await sampleOf(registry, problems('insufficient_balance'))).toBe(2);
      expect(await sampleOf(registry, problems('overloaded'))).toBe(overloaded);
      expect(await sampleOf(registry, 'lending_api_writes_overloaded_total')).toBe(overloaded);
      expect(await sampleOf(registry, problems('outcome_unknown'))).toBe(0);
    } finally {
      await app.close();
    }
  });

  it('exports how long writes waited in the queue, how many left it, and the average write transaction', async () => {
    const registry = new Registry();
    const app = await buildApp({ store: store(), metrics: registry, writeQueue: { maxWaitMs: 60_000, concurrency: 1 } });
    try {
      const writer = await createTenant(store(), 'Queued writer', 'write');
      const [limit] = await newLimits(store(), writer, 1);
      const answers = await Promise.all(Array.from({ length: 10 }, () => postEntry(app, 'drawdown', limit ?? '', { amount: '1.00' }, { authorization: writer.authorization })));
      expect(answers.map((answer) => answer.statusCode)).toEqual(Array.from({ length: 10 }, () => 201));
      expect(await sampleOf(registry, 'lending_api_write_queue_left_total')).toBe(10);
      expect(await sampleOf(registry, 'lending_api_write_queue_wait_seconds_total')).toBeGreaterThan(0);
      expect(await sampleOf(registry, 'lending_api_write_transaction_seconds')).toBeGreaterThan(0);
      expect(await sampleOf(registry, 'lending_api_write_queue{state="waiting"}')).toBe(0);
    } finally {
      await app.close();
    }
  });

  it("exports the database's role and lag as the node sees it: a primary, caught up", async () => {
    const registry = new Registry();
    const app = await buildApp({ store: store(), metrics: registry });
    try {
      expect(await sampleOf(registry, 'lending_api_database_reachable')).toBe(1);
      expect(await sampleOf(registry, 'lending_api_database_in_recovery')).toBe(0);
      expect(await sampleOf(registry, 'lending_api_replica_lag_seconds')).toBe(0);
      expect(await sampleOf(registry, 'lending_api_replica_lag_bytes')).toBe(0);
    } finally {
      await app.close();
    }
  });
});

const postgresUrl = process.env.DATABASE_URL;
describe.runIf(postgresUrl && /^postgres(ql)?:/.test(postgresUrl))('database budget exhaustion (on postgres)', () => {
  it('counts a request whose database budget ran out, and not one that was served', async () => {
    const store = await openPostgresTestStore(postgresUrl, 1);
    let release = () => {};
    try {
      const tenant = await createTenant(store);
      const registry = new Registry();
      const app = await buildApp({ store, metrics: registry, databaseRequestBudgetMs: 2000 });
      expect((await app.inject({ url: '/api/methods/', headers: { authorization: tenant.authorization } })).statusCode).toBe(200);
      expect(await sampleOf(registry, 'lending_api_db_budget_exhausted_total')).toBe(0);
      // The pool's one connection held: the request spends its budget waiting for it.
      const held = store.transaction(() => new Promise<void>((resolve) => (release = resolve)));
      const starved = await app.inject({ url: '/api/methods/', headers: { authorization: tenant.authorization } });
      release();
      await held;
      expect(starved.statusCode).toBe(503);
      expect(await sampleOf(registry, 'lending_api_db_budget_exhausted_total')).toBe(1);
      expect(await sampleOf(registry, problems('service_unavailable'))).toBe(1);
      await app.close();
    } finally {
      release();
      await store.close();
    }
  });
});

describe('replica metrics of an unreachable database', () => {
  it('reports the database unreachable, and leaves the role and lag out rather than report a made-up 0', async () => {
    const store = unreachableStore();
    const registry = new Registry();
    const app = await buildApp({ store, metrics: registry });
    try {
      const text = await registry.metrics();
      expect(text).toContain('# TYPE lending_api_replica_lag_seconds gauge');
      expect(text).toMatch(/^lending_api_database_reachable 0$/m);
      expect(text).not.toMatch(/^lending_api_(replica_lag_seconds|replica_lag_bytes|database_in_recovery) /m);
    } finally {
      await app.close();
      await store.close();
    }
  });
});
