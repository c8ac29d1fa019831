import { describe, expect, it } from 'vitest';
import { buildApp } from '../../helpers/app.js';
import { creditLimit, insertCreditLimits } from '../../helpers/records.js';
import { openPostgresTestStore } from '../../helpers/stores.js';
import { createTenant } from '../../helpers/tenants.js';

const postgresUrl = process.env.DATABASE_URL;
const BUDGET_MS = 3000;
/**
 * Each drawdown's commit takes this long (a deferred trigger): 20 in one
 * transaction take 9 s, three times the budget; the three that fit in half
 * of it take 1.35 s, which leaves a busy machine 1.65 s to open connections
 * and run the rest (at 1 s and 150 ms a loaded CI run used up its 550 ms).
 */
const COMMIT_MS_PER_WRITE = 450;

// A write's transaction has a database budget on PostgreSQL only.
describe.runIf(postgresUrl && /^postgres(ql)?:/.test(postgresUrl))('writes that arrive together while commits are slow (on postgres)', () => {
  it('are not joined into one transaction that outlives its budget: 20 drawdowns to 20 limits go at most 3 a transaction, and none is lost', async () => {
    const store = await openPostgresTestStore(postgresUrl, 12);
    try {
      const tenant = await createTenant(store, 'Slow commits', 'write');
      await insertCreditLimits(store, tenant.org.id, Array.from({ length: 21 }, (_, i) => creditLimit({ uid: `cl_${i}`, capacity: '1000.00', outstanding: '0.00' })));
      // One statement each: Citus passes DDL on to the workers as the text it came in.
      await store.exec(`CREATE FUNCTION slow_commit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(${COMMIT_MS_PER_WRITE / 1000}); RETURN NULL; END $$`);
      await store.exec('CREATE CONSTRAINT TRIGGER slow_commit AFTER INSERT ON ledger_entries DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION slow_commit()');
      const app = await buildApp({ store, databaseRequestBudgetMs: BUDGET_MS, authCache: { ttlMs: 600_000 } });
      try {
        const draw = (limit: string, key: string) =>
          app.inject({
            method: 'POST',
            url: `/api/limits/${limit}/drawdowns/`,
            headers: { authorization: tenant.authorization, 'content-type': 'application/json', 'idempotency-key': key },
            payload: { amount: '1.00' },
          });
        // One write first: the node measures how long a write's commit takes now.
        expect((await draw('cl_20', 'warm-up')).statusCode).toBe(201);
        const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => draw(`cl_${i}`, `together-${i}`)));
        // On a machine too busy even for three, a COMMIT may still outlive the budget: outcome_unknown (or, while
        // it runs, overloaded), never another answer; retried with its key, as a client does, it answers what was
        // recorded or records it once.
        for (const [i, answer] of answers.entries()) {
          if (answer.statusCode === 201) continue;
          expect(['outcome_unknown', 'overloaded', 'service_unavailable']).toContain((answer.json() as { code: string }).code);
          let retried = await draw(`cl_${i}`, `together-${i}`);
          for (let again = 0; retried.statusCode >= 503 && again < 60; again += 1) {
            await new Promise((resolve) => setTimeout(resolve, 250));
            retried = await draw(`cl_${i}`, `together-${i}`);
          }
          expect(retried.statusCode).toBe(201);
        }
        // Three fit in half the budget (COMMIT_MS_PER_WRITE, measured by the warm-up); a slower machine measures
        // slower writes and joins fewer. Joined up to the queue's maximum, 20 would take 9 s, three budgets.
        const sizes = await store.query<{ n: number }>(
          "SELECT count(*)::int AS n FROM ledger_entries WHERE org_id = $1 AND limit_id IN (SELECT id FROM credit_limits WHERE org_id = $1 AND uid <> 'cl_20') GROUP BY xmin::text",
          [tenant.org.id],
        );
        expect(Math.max(...sizes.map((size) => size.n))).toBeLessThanOrEqual(3);
        const [entries] = await store.query<{ n: string }>("SELECT count(*)::text AS n FROM ledger_entries WHERE org_id = $1 AND limit_id IN (SELECT id FROM credit_limits WHERE org_id = $1 AND uid <> 'cl_20')", [tenant.org.id]);
        expect(entries?.n).toBe('20');
      } finally {
        await app.close();
      }
    } finally {
      await store.close();
    }
  });
});
