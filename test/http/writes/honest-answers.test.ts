import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../helpers/app.js';
import { migrate } from '../../../src/store/migrate.js';
import { StoreUnavailableError } from '../../../src/store/store.js';
import { PostgresStore } from '../../../src/store/postgres-store.js';
import { creditLimit, insertCreditLimits } from '../../helpers/records.js';
import { createTempPostgres, postgresBinDir, type TempPostgres } from '../../helpers/temp-postgres.js';
import { createTenant, type Tenant } from '../../helpers/tenants.js';
import { ledgerState } from '../../helpers/writes.js';

const binDir = postgresBinDir();
const BUDGET_MS = 500;

// A PostgreSQL of this test's own: it is frozen (SIGSTOP) and given a slow COMMIT.
describe.runIf(binDir)('what a write that failed in the database is answered', () => {
  let pg: TempPostgres;
  let store: PostgresStore;
  let app: FastifyInstance;
  let tenant: Tenant;
  let frozen = false;

  beforeAll(async () => {
    pg = await createTempPostgres(binDir ?? '');
    // Production timeouts: only the database budget ends a wait on a frozen server.
    store = new PostgresStore(pg.url, { poolSize: 10, connectionTimeoutMs: 800, queryTimeoutMs: 15_000 });
    await migrate(store);
    tenant = await createTenant(store, 'Honest', 'write');
    await insertCreditLimits(
      store,
      tenant.org.id,
      ['cl_slow', 'cl_0', 'cl_1', 'cl_2', 'cl_3'].map((uid) => creditLimit({ uid, capacity: '1000000.00', outstanding: '0.00' })),
    );
    app = await buildApp({ store, databaseRequestBudgetMs: BUDGET_MS, authCache: { ttlMs: 600_000 } });
  }, 120_000);

  afterAll(async () => {
    if (frozen) await pg.signal('SIGCONT');
    await app?.close();
    await store?.close();
    await pg?.destroy();
  });

  const draw = (limit: string, key: string): Promise<LightMyRequestResponse> =>
    app.inject({
      method: 'POST',
      url: `/api/limits/${limit}/drawdowns/`,
      headers: { authorization: tenant.authorization, 'content-type': 'application/json', 'idempotency-key': key },
      payload: { amount: '1.00' },
    });
  const storedKeys = async (keys: readonly string[]) => {
    const rows = await store.query<{ idempotency_key: string }>('SELECT idempotency_key FROM idempotency_keys WHERE org_id = $1 AND idempotency_key = ANY ($2::text[])', [
      tenant.org.id,
      keys,
    ]);
    return new Set(rows.map((row) => row.idempotency_key));
  };

  it('answers 504 outcome_unknown, not 503, when the budget runs out while the COMMIT is under way; the same key then replays what was committed', async () => {
    // A COMMIT that takes longer than the budget: the write is committed after the service stopped waiting.
    await store.exec(`
      CREATE FUNCTION slow_commit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(${(6 * BUDGET_MS) / 1000}); RETURN NULL; END $$;
      CREATE CONSTRAINT TRIGGER slow_commit AFTER INSERT ON ledger_entries DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION slow_commit();`);
    const response = await draw('cl_slow', 'slow-commit');
    expect(response.statusCode).toBe(504);
    expect(response.json()).toMatchObject({ code: 'outcome_unknown' });
    expect(response.headers['retry-after']).toBe('1');
    await store.exec('DROP TRIGGER slow_commit ON ledger_entries; DROP FUNCTION slow_commit()');
    // The COMMIT the service gave up on goes through once the trigger's sleep ends.
    for (let polls = 0; (await storedKeys(['slow-commit'])).size === 0; polls += 1) {
      if (polls > 600) throw new Error('the slow COMMIT never landed');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const retried = await draw('cl_slow', 'slow-commit');
    expect(retried.statusCode).toBe(201);
    expect(retried.headers['idempotent-replayed']).toBe('true');
    expect(await ledgerState(store, tenant.org.id, 'cl_slow')).toEqual({ outstanding: '1.00', entries: 1 });
  }, 120_000);

  it('with the database frozen mid-burst, no write answered 503 (service_unavailable or overloaded) was committed, and every 504 completes once on retry', async () => {
    const keys = Array.from({ length: 600 }, (_, i) => `burst-${i}`);
    // Two limits: their queues drain batch after batch, so the burst is still under way when the freeze lands.
    let answered = 0;
    const answers = await Promise.all(
      keys.map(async (key, i) => {
        const response = await draw(`cl_${i % 2}`, key);
        // Whatever the first answers were (a busy machine may already refuse some), the freeze comes mid-burst.
        if (++answered === 10) {
          frozen = true;
          await pg.signal('SIGSTOP');
        }
        return { key, status: response.statusCode, code: response.statusCode >= 400 ? (response.json() as { code: string }).code : undefined };
      }),
    );
    expect(frozen, 'the burst outlasted 10 answers: the freeze came mid-burst').toBe(true);
    await pg.signal('SIGCONT');
    frozen = false;
    const unexpected = answers.filter((answer) => ![201, 503, 504].includes(answer.status));
    expect(unexpected).toEqual([]);
    const refused = answers.filter((answer) => answer.status === 503);
    expect(refused.length, 'the freeze refused some writes').toBeGreaterThan(0);
    for (const answer of refused) expect(['service_unavailable', 'overloaded']).toContain(answer.code);
    // A connection cut mid-COMMIT may still commit on the server: wait until nothing of the burst is in flight.
    // Right after SIGCONT the pool (through PgBouncer too) may still be reconnecting: a poll that gets no connection polls again.
    for (let polls = 0; ; polls += 1) {
      const active = await store
        .query<{ n: string }>("SELECT count(*)::text AS n FROM pg_stat_activity WHERE backend_type = 'client backend' AND state <> 'idle' AND pid <> pg_backend_pid()")
        .then(([row]) => row?.n, (error: unknown) => {
          if (error instanceof StoreUnavailableError) return undefined;
          throw error;
        });
      if (active === '0') break;
      if (polls > 600) throw new Error('transactions of the burst never ended');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const stored = await storedKeys(keys);
    expect(refused.filter((answer) => stored.has(answer.key)).map((answer) => answer.key)).toEqual([]);
    expect(answers.filter((answer) => answer.status === 201 && !stored.has(answer.key))).toEqual([]);
    // Every write not answered 201 is retried with its key, as a client does, until it is answered 201: the 504s
    // that were committed replay, the rest record once. A 503 ran nothing, so asking again is always safe (the pool
    // may still be reconnecting after SIGCONT); on a busy machine a retry's own COMMIT may outlive its budget too
    // (another 504), and the next retry then replays it if it committed.
    for (const answer of answers.filter((a) => a.status !== 201)) {
      const retry = () => draw(`cl_${keys.indexOf(answer.key) % 2}`, answer.key);
      let retried = await retry();
      let retryUnknown = false;
      for (let again = 0; (retried.statusCode === 503 || retried.statusCode === 504) && again < 20; again += 1) {
        retryUnknown ||= retried.statusCode === 504;
        await new Promise((resolve) => setTimeout(resolve, 100));
        retried = await retry();
      }
      expect(retried.statusCode, answer.key).toBe(201);
      const replayed = retried.headers['idempotent-replayed'] === 'true';
      // Committed before the retries: replayed. Not committed, and no retry's outcome unknown: recorded by the retry.
      if (stored.has(answer.key)) expect(replayed, answer.key).toBe(true);
      else if (!retryUnknown) expect(replayed, answer.key).toBe(false);
    }
    let entries = 0;
    for (let i = 0; i < 2; i += 1) {
      const state = await ledgerState(store, tenant.org.id, `cl_${i}`);
      expect(Number(state.outstanding)).toBe(state.entries);
      entries += state.entries;
    }
    expect(entries).toBe(keys.length);
  }, 180_000);
});
