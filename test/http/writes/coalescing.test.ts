import { expect, it } from 'vitest';
import { ApiError } from '../../../src/domain/errors.js';
import { entryOperation, LedgerError, LedgerWriter, limitViewOf, newLedgerId, type LedgerKind, type LedgerResult, type LedgerWriteRequest, type WriteAnswer } from '../../../src/ledger/index.js';
import { creditLimits } from '../../../src/resources/credit-limits.js';
import type { Store, Transaction } from '../../../src/store/store.js';
import { json, useApp } from '../../helpers/app.js';
import { lockWaiters } from '../../helpers/lock-waits.js';
import { describeEachStore } from '../../helpers/stores.js';
import { ledgerState, postEntry, useWriter } from '../../helpers/writes.js';

const TTL_HOURS = 24;

/**
 * A process's ledger, as server.ts builds it, but with no queue wait a write could outlast: these tests count the
 * transactions writes run in, and a busy machine refusing a batch for waiting behind a slow one is not what they test.
 */
function writerOn(store: Store): LedgerWriter {
  return new LedgerWriter(store, { idempotencyTtlHours: TTL_HOURS, queue: { maxWaitMs: 600_000 } });
}

/**
 * The store, counting its transactions; `failQuery(n)` makes the n-th statement of the next transaction
 * throw, `pauseQuery(n)` makes it wait until released.
 */
function instrumented(inner: () => Store) {
  let transactions = 0;
  let failAt: number | undefined;
  let pause: { at: number; reached: () => void; released: Promise<void> } | undefined;
  const store = (): Store => {
    const base = inner();
    return {
      kind: base.kind,
      description: base.description,
      query: (sql, params, options) => base.query(sql, params, options),
      exec: (sql) => base.exec(sql),
      ping: () => base.ping(),
      close: () => base.close(),
      transaction: <T>(fn: (tx: Transaction) => Promise<T>, options?: Parameters<Store['transaction']>[1]) => {
        transactions += 1;
        const failing = failAt;
        const paused = pause;
        failAt = undefined;
        pause = undefined;
        let statements = 0;
        return base.transaction((tx) => {
          const counted: Transaction = {
            ...tx,
            query: async (sql, params, queryOptions) => {
              statements += 1;
              if (statements === failing) throw new Error('forced failure of a statement');
              if (statements === paused?.at) {
                paused.reached();
                await paused.released;
              }
              return tx.query(sql, params, queryOptions);
            },
            queryAtCommit: (sql, params) => tx.queryAtCommit(sql, params),
          };
          return fn(counted);
        }, options);
      },
    };
  };
  return {
    store,
    transactions: () => transactions,
    failQuery: (n: number) => {
      failAt = n;
    },
    pauseQuery: (n: number) => {
      let reached = () => {};
      let release = () => {};
      const reachedPromise = new Promise<void>((resolve) => (reached = resolve));
      const released = new Promise<void>((resolve) => (release = resolve));
      pause = { at: n, reached, released };
      return { reached: reachedPromise, release };
    },
  };
}

type Outcome = { status: number; outstanding?: string; code?: string; replayed?: boolean } | { error: string; status: number };

function outcomeOf(settled: PromiseSettledResult<WriteAnswer>): Outcome {
  if (settled.status === 'rejected') {
    const error: unknown = settled.reason;
    if (error instanceof LedgerError) return { error: error.code, status: 0 }; // the HTTP route's to map (a 404 or 422)
    return error instanceof ApiError ? { error: error.code, status: error.status } : { error: String(error), status: 500 };
  }
  if (settled.value.refusal) return { status: settled.value.status, code: settled.value.refusal.code, replayed: settled.value.replayed };
  const body = JSON.parse(settled.value.body) as { limit?: { outstanding: number }; code?: string };
  return {
    status: settled.value.status,
    ...(body.limit ? { outstanding: body.limit.outstanding.toFixed(2) } : {}),
    ...(body.code ? { code: body.code } : {}),
    replayed: settled.value.replayed,
  };
}

describeEachStore('coalesced writes to one limit', (store, kind) => {
  const counted = instrumented(store);
  const app = useApp(counted.store);
  const { writer, newLimit } = useWriter(store);

  const request = (limitUid: string, kind: LedgerKind, amount: string, idempotencyKey: string, at?: string): LedgerWriteRequest<LedgerResult> => ({
    operation: entryOperation(limitViewOf(creditLimits), { orgId: writer().org.id, kind, id: newLedgerId(kind), limit: limitUid, amount, at, keyId: writer().keyId }),
    idempotency: { key: idempotencyKey, keyId: writer().keyId },
    requestId: `req-${idempotencyKey}`,
  });

  it('runs writes queued behind a limit in flight in one transaction each batch, with the outcomes of a sequential run', async () => {
    const coalesced = await newLimit('40.00');
    const sequential = await newLimit('40.00');
    // Drawdowns and repayments that run the limit into its capacity and back: some refused either way.
    const steps = Array.from({ length: 40 }, (_, i) => ({
      kind: (i % 4 === 3 || i % 9 === 8 ? 'repayment' : 'drawdown') as LedgerKind,
      amount: ['7.00', '13.00', '20.00', '31.00', '2.50'][i % 5] ?? '1.00',
    }));
    const writes = writerOn(counted.store());
    const before = counted.transactions();
    // Submitted in this order in one tick, they start together when it ends: 32, then the other 8.
    const answers = await Promise.allSettled(steps.map((step, i) => writes.write(request(coalesced, step.kind, step.amount, `seq-c-${i}`))));
    expect(counted.transactions() - before).toBe(2);
    expect(writes.busyLanes).toBe(0);

    const oneByOne: PromiseSettledResult<WriteAnswer>[] = [];
    const alone = writerOn(store());
    for (const [i, step] of steps.entries()) {
      oneByOne.push(await alone.write(request(sequential, step.kind, step.amount, `seq-s-${i}`)).then(
        (value) => ({ status: 'fulfilled' as const, value }),
        (reason: unknown) => ({ status: 'rejected' as const, reason }),
      ));
    }
    // And the model: outstanding in cents, a drawdown refused above capacity, a repayment above outstanding.
    let outstanding = 0;
    const model = steps.map((step) => {
      const cents = Math.round(Number(step.amount) * 100);
      const next = step.kind === 'drawdown' ? outstanding + cents : outstanding - cents;
      if (next < 0 || next > 4_000) return { status: 409, code: step.kind === 'drawdown' ? 'insufficient_balance' : 'repayment_exceeds_outstanding', replayed: false };
      outstanding = next;
      return { status: 201, outstanding: (next / 100).toFixed(2), replayed: false };
    });
    expect(answers.map(outcomeOf)).toEqual(model);
    expect(oneByOne.map(outcomeOf)).toEqual(model);
    expect(model.filter((m) => m.code === 'insufficient_balance').length).toBeGreaterThan(3);
    expect(model.filter((m) => m.code === 'repayment_exceeds_outstanding').length).toBeGreaterThan(1);
    const entries = model.filter((m) => m.status === 201).length;
    expect(await ledgerState(store(), writer().org.id, coalesced)).toEqual({ outstanding: (outstanding / 100).toFixed(2), entries });
    // Every answer, refusals included, is stored: a retry replays it.
    const retried = await Promise.all(steps.map((step, i) => writes.write(request(coalesced, step.kind, step.amount, `seq-c-${i}`))));
    expect(retried.map((answer) => answer.replayed)).toEqual(steps.map(() => true));
    expect(retried.map((answer) => answer.body)).toEqual(answers.map((answer) => (answer.status === 'fulfilled' ? answer.value.body : undefined)));
  });

  // PGlite runs a transaction's statements synchronously in this process: over HTTP, one write's
  // transaction has ended before the next request reaches the coalescer, so there is nothing to coalesce.
  it('coalesces concurrent HTTP drawdowns to one limit (on PostgreSQL: fewer transactions than writes), each balance seen once', async () => {
    const uid = await newLimit('400.00');
    const before = counted.transactions();
    const answers = await Promise.all(
      Array.from({ length: 60 }, () => postEntry(app(), 'drawdown', uid, { amount: '10.00' }, { authorization: writer().authorization })),
    );
    if (kind === 'postgres') expect(counted.transactions() - before).toBeLessThan(60);
    expect(answers.filter((a) => a.statusCode !== 201 && a.statusCode !== 409).map((a) => a.body)).toEqual([]);
    const created = answers.filter((a) => a.statusCode === 201);
    expect(created).toHaveLength(40);
    expect(new Set(created.map((a) => json<{ limit: { balance: number } }>(a).limit.balance)).size).toBe(40);
    expect(await ledgerState(store(), writer().org.id, uid)).toEqual({ outstanding: '400.00', entries: 40 });
  });

  it('runs a batch again write by write when one of its writes fails: that one fails as it would alone, the others succeed exactly once', async () => {
    const uid = await newLimit('1000.00');
    const writes = writerOn(counted.store());
    const before = counted.transactions();
    const answers = await Promise.allSettled([
      writes.write(request(uid, 'drawdown', '1.00', 'fail-0')),
      writes.write(request(uid, 'drawdown', '2.00', 'fail-1')),
      // The database finds this `at` in the future: alone it is a 422 and changes nothing.
      writes.write(request(uid, 'drawdown', '4.00', 'fail-2', '2999-01-01T00:00:00.000000Z')),
      writes.write(request(uid, 'repayment', '1.00', 'fail-3')),
      writes.write(request(uid, 'drawdown', '8.00', 'fail-4')),
    ]);
    // The five, submitted in one tick, in one batch, which rolled back; then each alone.
    expect(counted.transactions() - before).toBe(6);
    expect(answers.map(outcomeOf)).toEqual([
      { status: 201, outstanding: '1.00', replayed: false },
      { status: 201, outstanding: '3.00', replayed: false },
      { error: 'invalid_entry', status: 0 },
      { status: 201, outstanding: '2.00', replayed: false },
      { status: 201, outstanding: '10.00', replayed: false },
    ]);
    expect(await ledgerState(store(), writer().org.id, uid)).toEqual({ outstanding: '10.00', entries: 4 });
    const [keys] = await store().query<{ n: string }>(
      `SELECT count(*)::text AS n FROM idempotency_keys WHERE org_id = $1 AND idempotency_key LIKE 'fail-%' AND response_status IS NOT NULL`,
      [writer().org.id],
    );
    expect(keys?.n).toBe('4');
    expect(writes.busyLanes).toBe(0);
  });

  it('runs a batch again write by write when the database fails it midway: nothing of it stays, each write is recorded once', async () => {
    const uid = await newLimit('1000.00');
    const writes = writerOn(counted.store());
    const before = counted.transactions();
    const leader = writes.write(request(uid, 'drawdown', '1.00', 'dbfail-0'));
    const queued = [1, 2, 3, 4].map((i) => writes.write(request(uid, 'drawdown', `${i}.00`, `dbfail-${i}`)));
    // The batch's third statement (after its keys' claim and its first write, not committed) fails.
    counted.failQuery(3);
    const answers = await Promise.allSettled([leader, ...queued]);
    // The five, submitted in one tick, in one batch, which failed; then each alone.
    expect(counted.transactions() - before).toBe(6);
    expect(answers.map(outcomeOf)).toEqual(['1.00', '2.00', '4.00', '7.00', '11.00'].map((outstanding) => ({ status: 201, outstanding, replayed: false })));
    expect(await ledgerState(store(), writer().org.id, uid)).toEqual({ outstanding: '11.00', entries: 5 });
  });

  it('never lets two writes with the same Idempotency-Key both write: the later one replays or is refused', async () => {
    const uid = await newLimit('1000.00');
    const writes = writerOn(counted.store());
    const before = counted.transactions();
    const answers = await Promise.allSettled([
      writes.write(request(uid, 'drawdown', '1.00', 'dup-0')),
      writes.write(request(uid, 'drawdown', '2.00', 'dup-1')),
      writes.write(request(uid, 'drawdown', '3.00', 'dup-2')),
      writes.write(request(uid, 'drawdown', '2.00', 'dup-1')),
      writes.write(request(uid, 'drawdown', '5.00', 'dup-1')),
      writes.write(request(uid, 'drawdown', '4.00', 'dup-3')),
    ]);
    // [dup-0, dup-1, dup-2]; the second dup-1 alone (the third would repeat its key); [dup-1 (5.00), dup-3].
    expect(counted.transactions() - before).toBe(3);
    expect(answers.map(outcomeOf)).toEqual([
      { status: 201, outstanding: '1.00', replayed: false },
      { status: 201, outstanding: '3.00', replayed: false },
      { status: 201, outstanding: '6.00', replayed: false },
      { status: 201, outstanding: '3.00', replayed: true },
      { error: 'idempotency_key_reused', status: 422 },
      { status: 201, outstanding: '10.00', replayed: false },
    ]);
    const [first, , , replay] = answers;
    expect(replay?.status === 'fulfilled' && first?.status === 'fulfilled' && replay.value.body).toBe(answers[1]?.status === 'fulfilled' && answers[1].value.body);
    expect(await ledgerState(store(), writer().org.id, uid)).toEqual({ outstanding: '10.00', entries: 4 });

    // Over HTTP, with the requests of each key racing each other: one entry per key.
    const http = await newLimit('1000.00');
    const raced = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        postEntry(app(), 'drawdown', http, { amount: '1.00' }, { authorization: writer().authorization, idempotencyKey: `race-${i % 10}` }),
      ),
    );
    expect(raced.map((a) => a.statusCode)).toEqual(raced.map(() => 201));
    for (let k = 0; k < 10; k += 1) {
      const same = raced.filter((_, i) => i % 10 === k);
      expect(same.filter((a) => a.headers['idempotent-replayed'] === undefined)).toHaveLength(1);
      expect(new Set(same.map((a) => a.body)).size).toBe(1);
    }
    expect(await ledgerState(store(), writer().org.id, http)).toEqual({ outstanding: '10.00', entries: 10 });
  });

  // Two processes (two coalescers) on one database; PGlite has one connection and runs nothing concurrently.
  if (kind === 'postgres') {
    it(
      'the same request sent to another process while a batch holding its key waits for the limit: no deadlock, no second transaction, it replays',
      async () => {
        const uid = await newLimit('1000.00');
        const processA = writerOn(counted.store());
        const processB = writerOn(counted.store());
        const leader = processA.write(request(uid, 'drawdown', '1.00', 'dl-0'));
        const queued = [processA.write(request(uid, 'drawdown', '2.00', 'dl-1')), processA.write(request(uid, 'drawdown', '3.00', 'dl-k'))];
        // A's batch has claimed dl-1 and dl-k and stops before its first write. (Before keys were claimed
        // first, it held the limit's row after dl-1 while B held dl-k and waited for the limit: a deadlock.)
        const gate = counted.pauseQuery(2);
        await gate.reached;
        const before = counted.transactions();
        const sameRequest = processB.write(request(uid, 'drawdown', '3.00', 'dl-k'));
        try {
          // B, and only B: waiting for a lock while holding one on this suite's own idempotency_keys (its claim of
          // dl-k). Other test files' writes, in other schemas, wait on locks with the same statement text.
          for (let waited = 0; (await lockWaiters(store(), { holding: 'idempotency_keys' })) === 0; waited += 1) {
            if (waited > 500) throw new Error('B never waited for its key');
            await new Promise((resolve) => setTimeout(resolve, 10));
          }
        } finally {
          gate.release(); // also when the observation fails: A's open transaction would hold B, and the schema, forever
        }
        const answers = await Promise.allSettled([leader, ...queued, sameRequest]);
        expect(answers.map((answer) => answer.status)).toEqual(['fulfilled', 'fulfilled', 'fulfilled', 'fulfilled']);
        const [, , k, again] = answers.map((answer) => (answer.status === 'fulfilled' ? answer.value : undefined));
        expect(k?.status).toBe(201);
        expect(again?.body).toBe(k?.body);
        expect([k?.replayed, again?.replayed].sort()).toEqual([false, true]);
        // B's one transaction: it was never a deadlock victim run again.
        expect(counted.transactions() - before).toBe(1);
        expect(await ledgerState(store(), writer().org.id, uid)).toEqual({ outstanding: '6.00', entries: 3 });
      },
    );
  }
});

