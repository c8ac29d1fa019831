import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PostgresStore } from '../../../src/store/postgres-store.js';
import { creditLimit, insertCreditLimits } from '../../helpers/records.js';
import type { SpawnedServer } from '../../helpers/spawn-server.js';
import { postgresBinDir } from '../../helpers/temp-postgres.js';
import type { Tenant } from '../../helpers/tenants.js';
import { startTwoNodes, type TwoNodes } from '../../helpers/two-nodes.js';

const binDir = postgresBinDir();
const LIMITS = 40;

interface Answer {
  readonly key: string;
  readonly status: number;
  readonly code: string | undefined;
  /** A refusal's problem detail: shown when a test fails, to tell a queue wait from a database budget. */
  readonly detail: string | undefined;
  readonly replayed: boolean;
  readonly body: string;
  readonly retryAfter: string | null;
}

// Two real `serve` processes with their default settings on a PostgreSQL of this test's own (its
// pg_stat_database counts only this test's deadlocks).
describe.runIf(binDir)('two serve processes writing to one PostgreSQL', () => {
  let store: PostgresStore;
  let tenant: Tenant;
  const servers: SpawnedServer[] = [];
  let nodes: TwoNodes | undefined;

  beforeAll(async () => {
    nodes = await startTwoNodes(binDir ?? '', 'Two nodes', async (seedStore, seedTenant) => {
      await insertCreditLimits(
        seedStore,
        seedTenant.org.id,
        Array.from({ length: LIMITS }, (_, i) => creditLimit({ uid: `cl_${i}`, capacity: '1000000.00', outstanding: '0.00' })),
      );
      // A request's database time of 30 s, not 2: the write queue's bound (WRITE_QUEUE_WAIT_MS, 5 s) is what sheds
      // these bursts; a node the machine stalls for over 2 s could not tell that from a database that does not answer.
    }, { DATABASE_REQUEST_BUDGET_MS: '30000' });
    ({ store, tenant } = nodes);
    servers.push(...nodes.servers);
  }, 300_000);

  afterAll(async () => {
    await nodes?.stop();
  });

  const post = async (node: number, limit: string, key: string): Promise<Answer> => {
    const server = servers[node % servers.length];
    if (!server) throw new Error('no server');
    const response = await fetch(`${server.url}/api/limits/${limit}/drawdowns/`, {
      method: 'POST',
      headers: { authorization: tenant.authorization, 'content-type': 'application/json', 'idempotency-key': key },
      body: JSON.stringify({ amount: '1.00' }),
    });
    const body = await response.text();
    const problem = response.status >= 400 ? (JSON.parse(body) as { code: string; detail: string }) : undefined;
    return { key, status: response.status, code: problem?.code, detail: problem?.detail, replayed: response.headers.get('idempotent-replayed') === 'true', body, retryAfter: response.headers.get('retry-after') };
  };
  const deadlocks = async () => {
    const [row] = await store.query<{ n: string }>('SELECT deadlocks::text AS n FROM pg_stat_database WHERE datname = current_database()');
    return Number(row?.n);
  };
  const refusals = (answers: readonly Answer[]) => answers.filter((answer) => answer.status !== 201).map(({ key, status, code, detail }) => ({ key, status, code, detail }));
  /** Every answer before the last one of each write: what the client was told to retry. */
  const retried: Answer[] = [];
  /**
   * As the SDK does: a 504 outcome_unknown (on a machine so busy that a COMMIT outlived the write's database
   * time) is sent again with its key, which answers what was recorded or records it once; a 503 overloaded (a
   * machine so busy that the burst exceeds what the database commits in the queue's bound: nothing was
   * recorded) is sent again after its Retry-After. Nothing else is retried.
   */
  const postUntilKnown = async (node: number, limit: string, key: string): Promise<Answer> => {
    for (let attempt = 0; ; attempt += 1) {
      const answer = await post(node + attempt, limit, key);
      if ((answer.code !== 'outcome_unknown' && answer.code !== 'overloaded') || attempt === 5) return answer;
      retried.push(answer);
      if (answer.code === 'overloaded') await new Promise((resolve) => setTimeout(resolve, Number(answer.retryAfter ?? '1') * 1000));
    }
  };
  /** The database stayed reachable throughout: nothing was ever answered as if it were not. */
  const expectOnlyOverloadOrUnknownRetried = () => {
    expect(retried.filter((answer) => answer.code !== 'overloaded' && answer.code !== 'outcome_unknown').map(({ key, code, detail }) => ({ key, code, detail }))).toEqual([]);
  };
  /** Every limit's outstanding is the sum of its entries, and each 201 is in the ledger once. */
  const expectExactMoney = async (answers: readonly Answer[]) => {
    const [drift] = await store.query<{ n: string }>(
      `SELECT count(*)::text AS n FROM credit_limits l
        WHERE l.org_id = $1 AND l.outstanding <> (SELECT coalesce(sum(CASE e.kind WHEN 'drawdown' THEN e.amount ELSE -e.amount END), 0)
                                                     FROM ledger_entries e WHERE e.org_id = l.org_id AND e.limit_id = l.id)`,
      [tenant.org.id],
    );
    expect(drift?.n).toBe('0');
    const ids = answers.filter((answer) => answer.status === 201).map((answer) => (JSON.parse(answer.body) as { entry: { id: string } }).entry.id);
    const found = await store.query<{ id: string }>('SELECT id FROM ledger_entries WHERE org_id = $1 AND id = ANY ($2::text[])', [tenant.org.id, ids]);
    expect(found).toHaveLength(new Set(ids).size);
  };

  it('answers a burst of 400 drawdowns over 40 limits, then 400 on one limit, sent alternately to both: every one 201 in the end, none refused but as overloaded (never as the database unreachable)', async () => {
    const spread = await Promise.all(Array.from({ length: 400 }, (_, i) => postUntilKnown(i, `cl_${i % LIMITS}`, `spread-${i}`)));
    expect(refusals(spread)).toEqual([]);
    const hot = await Promise.all(Array.from({ length: 400 }, (_, i) => postUntilKnown(i, 'cl_0', `hot-${i}`)));
    expect(refusals(hot)).toEqual([]);
    await expectExactMoney([...spread, ...hot]);
    expectOnlyOverloadOrUnknownRetried();
  }, 300_000);

  it('runs one of the copies of a key sent to both processes at once and replays it to the others, with no deadlock in PostgreSQL', async () => {
    const before = await deadlocks();
    // 30 keys × 10 copies, alternated over the two processes, on 30 limits.
    const answers = await Promise.all(Array.from({ length: 300 }, (_, i) => postUntilKnown(i, `cl_${Math.floor(i / 10)}`, `same-${Math.floor(i / 10)}`)));
    expect(refusals(answers)).toEqual([]);
    for (let k = 0; k < 30; k += 1) {
      const copies = answers.filter((answer) => answer.key === `same-${k}`);
      // One ran (its answer a 201, or a 504 whose retry replayed it); the entries are counted below.
      expect(copies.filter((answer) => !answer.replayed).length).toBeLessThanOrEqual(1);
      expect(new Set(copies.map((answer) => answer.body)).size).toBe(1);
    }
    expect(await deadlocks()).toBe(before);
    await expectExactMoney(answers);
    expectOnlyOverloadOrUnknownRetried();
    const [entries] = await store.query<{ n: string }>("SELECT count(*)::text AS n FROM ledger_entries WHERE org_id = $1 AND limit_id IN (SELECT id FROM credit_limits WHERE org_id = $1 AND uid <> 'cl_0')", [tenant.org.id]);
    // The spread burst's 390 entries on cl_1…cl_39, and one per key of this burst on cl_1…cl_29.
    expect(entries?.n).toBe(String(390 + 29));
  }, 300_000);
});
