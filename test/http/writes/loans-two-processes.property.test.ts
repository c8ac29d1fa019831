import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PostgresStore } from '../../../src/store/postgres-store.js';
import { creditLimit, insertCreditLimits, insertPaymentMethods, paymentMethod } from '../../helpers/records.js';
import type { SpawnedServer } from '../../helpers/spawn-server.js';
import { postgresBinDir } from '../../helpers/temp-postgres.js';
import type { Tenant } from '../../helpers/tenants.js';
import { startTwoNodes, UNBOUNDED_WAITS, type TwoNodes } from '../../helpers/two-nodes.js';

const binDir = postgresBinDir();
const LIMITS = ['cl_m0', 'cl_m1', 'cl_m2'];

/** One write, as the property draws it: the limit or loan it aims at, an amount in cents, and whether it is sent twice. */
type Write =
  | { readonly kind: 'loan'; readonly limit: number; readonly cents: number; readonly twice: boolean }
  /** `full`: the loan's whole principal (to zero, if nothing was repaid yet). */
  | { readonly kind: 'loan-repayment'; readonly loan: number; readonly cents: number; readonly full: boolean; readonly twice: boolean }
  | { readonly kind: 'drawdown' | 'repayment'; readonly limit: number; readonly cents: number; readonly twice: boolean };

interface Answer {
  readonly key: string;
  readonly status: number;
  readonly code: string | undefined;
  readonly replayed: boolean;
  readonly body: string;
}

const cents = fc.integer({ min: 1, max: 40_000 });
const write: fc.Arbitrary<Write> = fc.oneof(
  fc.record({ kind: fc.constant('loan' as const), limit: fc.nat(LIMITS.length - 1), cents, twice: fc.boolean() }),
  fc.record({ kind: fc.constant('loan-repayment' as const), loan: fc.nat(), cents, full: fc.boolean(), twice: fc.boolean() }),
  fc.record({ kind: fc.constantFrom('drawdown' as const, 'repayment' as const), limit: fc.nat(LIMITS.length - 1), cents, twice: fc.boolean() }),
);

// Loan creations, loan repayments, direct drawdowns and direct repayments on
// shared limits, sent concurrently and alternately to two real `serve`
// processes on one PostgreSQL, some twice with one Idempotency-Key (to both
// processes at once). After every round, from the database: no limit
// overdrawn, every limit's outstanding the sum of its entries, every loan's
// outstanding its principal less its repayments with the right status, and
// every 201 in the ledger exactly once (and nothing else: a 409 wrote nothing).
describe.runIf(binDir)('loans, repayments and direct entries over two serve processes (model)', () => {
  let store: PostgresStore;
  let tenant: Tenant;
  const servers: SpawnedServer[] = [];
  let nodes: TwoNodes | undefined;
  const loans: string[] = [];
  const principals = new Map<string, string>();
  /** Every distinct write answered 201 (a key's copies count once): each is one entry. */
  const created = new Map<string, Answer>();
  let sent = 0;

  beforeAll(async () => {
    nodes = await startTwoNodes(binDir ?? '', 'Model lender', async (seedStore, seedTenant) => {
      await insertCreditLimits(seedStore, seedTenant.org.id, LIMITS.map((uid) => creditLimit({ uid, entity: 'ent_m', currency: 'USD', capacity: '1000.00', outstanding: '0.00' })));
      await insertPaymentMethods(seedStore, seedTenant.org.id, [paymentMethod({ uid: 'pm_m', entity: 'ent_m', currency: 'USD' })]);
    }, UNBOUNDED_WAITS);
    ({ store, tenant } = nodes);
    servers.push(...nodes.servers);
  }, 300_000);

  afterAll(async () => {
    await nodes?.stop();
  });

  const money = (amount: number) => `${Math.floor(amount / 100)}.${String(amount % 100).padStart(2, '0')}`;

  const requestOf = (w: Write): { path: string; body: unknown } | undefined => {
    const amount = money(w.cents);
    switch (w.kind) {
      case 'loan':
        return { path: '/api/loans/', body: { credit_limit: LIMITS[w.limit], payment_method: 'pm_m', principal: amount } };
      case 'loan-repayment': {
        const loan = loans[w.loan % Math.max(1, loans.length)];
        if (loan === undefined) return undefined;
        return { path: `/api/loans/${loan}/repayments/`, body: { amount: w.full ? (principals.get(loan) ?? amount) : amount } };
      }
      default:
        return { path: `/api/limits/${LIMITS[w.limit]}/${w.kind}s/`, body: { amount } };
    }
  };

  const post = async (node: number, path: string, body: unknown, key: string): Promise<Answer> => {
    const server = servers[node % servers.length];
    if (!server) throw new Error('no server');
    const response = await fetch(`${server.url}${path}`, {
      method: 'POST',
      headers: { authorization: tenant.authorization, 'content-type': 'application/json', 'idempotency-key': key },
      body: JSON.stringify(body),
    });
    const text = await response.text();
    const code = response.status >= 400 ? (JSON.parse(text) as { code: string }).code : undefined;
    return { key, status: response.status, code, replayed: response.headers.get('idempotent-replayed') === 'true', body: text };
  };

  /** One round: every write at once, alternating processes; a write sent twice goes to both with one key. */
  const round = async (writes: readonly Write[]): Promise<void> => {
    const sends = writes.flatMap((w) => {
      const request = requestOf(w);
      if (!request) return [];
      sent += 1;
      const key = `model-${sent}`;
      const copies = w.twice ? [0, 1] : [sent % 2];
      return [{ key, answers: Promise.all(copies.map((node) => post(node, request.path, request.body, key))) }];
    });
    for (const { key, answers } of sends) {
      const copies = await answers;
      // Only answers the writer can give: a 201 or a refusal of the balance or the outstanding amount.
      for (const answer of copies) expect([201, 409], answer.body).toContain(answer.status);
      // A key's copies get one answer: the same status and body.
      expect(new Set(copies.map((answer) => `${answer.status} ${answer.body}`)).size, key).toBe(1);
      const [first] = copies;
      if (!first) continue;
      if (first.status === 409) expect(['insufficient_balance', 'repayment_exceeds_outstanding']).toContain(first.code);
      if (first.status !== 201) continue;
      created.set(key, first);
      const answer = JSON.parse(first.body) as { entry?: unknown; loan?: { uid: string; principal: number } };
      if (answer.loan && !answer.entry) {
        loans.push(answer.loan.uid);
        principals.set(answer.loan.uid, answer.loan.principal.toFixed(2));
      }
    }
    await expectLedgerHolds();
  };

  const expectLedgerHolds = async (): Promise<void> => {
    const limits = await store.query<{ uid: string; outstanding: string; capacity: string; summed: string }>(
      `SELECT l.uid, l.outstanding::text AS outstanding, l.capacity::text AS capacity,
              (SELECT coalesce(sum(CASE e.kind WHEN 'drawdown' THEN e.amount ELSE -e.amount END), 0) FROM ledger_entries e
                WHERE e.org_id = l.org_id AND e.limit_id = l.id)::numeric(15, 2)::text AS summed
         FROM credit_limits l WHERE l.org_id = $1 ORDER BY l.uid`,
      [tenant.org.id],
    );
    for (const limit of limits) {
      expect(Number(limit.outstanding), limit.uid).toBeGreaterThanOrEqual(0);
      expect(Number(limit.outstanding), limit.uid).toBeLessThanOrEqual(Number(limit.capacity));
      expect(limit.outstanding, limit.uid).toBe(limit.summed);
    }
    const stored = await store.query<{ uid: string; principal: string; outstanding: string; status: string; drawn: string; repaid: string; drawdowns: string }>(
      `SELECT n.uid, n.principal::text AS principal, n.outstanding::text AS outstanding, n.status,
              (SELECT coalesce(sum(e.amount), 0) FROM ledger_entries e WHERE e.org_id = n.org_id AND e.loan = n.uid AND e.kind = 'drawdown')::numeric(15, 2)::text AS drawn,
              (SELECT coalesce(sum(e.amount), 0) FROM ledger_entries e WHERE e.org_id = n.org_id AND e.loan = n.uid AND e.kind = 'repayment')::text AS repaid,
              (SELECT count(*) FROM ledger_entries e WHERE e.org_id = n.org_id AND e.loan = n.uid AND e.kind = 'drawdown')::text AS drawdowns
         FROM loans n WHERE n.org_id = $1`,
      [tenant.org.id],
    );
    expect(stored.map((loan) => loan.uid).sort()).toEqual([...loans].sort());
    for (const loan of stored) {
      expect(loan.drawdowns, loan.uid).toBe('1');
      expect(loan.drawn, loan.uid).toBe(loan.principal);
      expect(Math.round(Number(loan.outstanding) * 100), loan.uid).toBe(Math.round((Number(loan.principal) - Number(loan.repaid)) * 100));
      expect(loan.status, loan.uid).toBe(Number(loan.outstanding) > 0 ? 'active' : 'repaid');
    }
    // Each 201 is one entry in the ledger, and there is no other entry: a 409 wrote nothing.
    const ids = [...created.values()].map((answer) => {
      const body = JSON.parse(answer.body) as { entry?: { id: string }; loan?: { uid: string } };
      return body.entry?.id ?? `loan ${body.loan?.uid ?? ''}`;
    });
    const entries = await store.query<{ id: string; loan: string | null; kind: string }>('SELECT id, loan, kind FROM ledger_entries WHERE org_id = $1', [tenant.org.id]);
    const recorded = entries.map((entry) => (entry.loan !== null && entry.kind === 'drawdown' ? `loan ${entry.loan}` : entry.id));
    expect(recorded.sort()).toEqual(ids.sort());
  };

  it('keeps every limit and loan exact under interleaved writes to both processes', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.array(write, { minLength: 1, maxLength: 12 }), { minLength: 1, maxLength: 3 }), async (rounds) => {
        for (const writes of rounds) await round(writes);
      }),
      { numRuns: 12, endOnFailure: true },
    );
    // The property reached both outcomes of each kind it draws.
    const statuses = new Set([...created.values()].map((answer) => answer.status));
    expect(statuses.has(201)).toBe(true);
    expect(loans.length).toBeGreaterThan(0);
  }, 600_000);
});
