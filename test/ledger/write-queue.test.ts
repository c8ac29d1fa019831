import { describe, expect, it } from 'vitest';
import { WriteQueue, type Settled, type WriteQueueBudget, type WriteQueueOptions } from '../../src/ledger/write-queue.js';

interface Req {
  readonly lane: string;
  readonly key: string;
  /** Lone writes of one group may run together (QueuedWork.groupOf). */
  readonly group?: string;
  /** QueuedWork.tenantOf; one tenant for all when absent. */
  readonly tenant?: string;
}

class Overloaded extends Error {}
class WaitedTooLong extends Error {}

/** A queue over fake transactions the test ends one by one, on a clock of the test's own. */
function fakeQueue(options: Partial<WriteQueueOptions & WriteQueueBudget> = {}) {
  let clock = 0;
  let holdTurn = false;
  const turns: (() => void)[] = [];
  const runs: { keys: string[]; end: () => Promise<void> }[] = [];
  const queue = new WriteQueue<Req, string>(
    {
      laneOf: (r) => r.lane,
      conflictKeyOf: (r) => r.key,
      groupOf: (r) => r.group,
      tenantOf: (r) => r.tenant ?? '',
      run: (batch) =>
        new Promise<Settled<string>[]>((resolve) => {
          runs.push({
            keys: batch.map((r) => r.key),
            end: async () => {
              resolve(batch.map((r) => ({ ok: true, value: `done ${r.key}` })));
              await new Promise<void>((next) => setImmediate(next));
            },
          });
        }),
      overloaded: (waitMs) => new Overloaded(`overloaded: about ${Math.round(waitMs)} ms`),
      waitedTooLong: (waitedMs) => new WaitedTooLong(`waited ${Math.round(waitedMs)} ms`),
    },
    { maxBatch: 32, concurrency: 4, maxWaitMs: 5000, ...options },
    () => clock,
    // The end of the event loop's turn, when the test says (runTurn); at once unless it asks to hold it.
    (start) => (holdTurn ? turns.push(start) : start()),
  );
  const settle = (request: Req) => queue.run(request).then((value) => value, (error: Error) => error.message);
  return {
    queue,
    runs,
    settle,
    advance: (ms: number) => (clock += ms),
    /** From now on, lanes start only when runTurn ends the event loop's turn. */
    holdTurns: () => (holdTurn = true),
    runTurn: () => turns.splice(0).forEach((start) => start()),
    /** Ends the oldest transaction still running. */
    endNext: async () => {
      const next = runs.find((run) => !('ended' in run));
      if (!next) throw new Error('no transaction running');
      Object.assign(next, { ended: true });
      await next.end();
    },
  };
}

describe('WriteQueue', () => {
  it('runs a write to an idle lane at once and alone, and forgets the lane once it is answered', async () => {
    const { queue, runs, settle, endNext } = fakeQueue();
    const answer = settle({ lane: 'a', key: 'k1' });
    expect(runs.map((run) => run.keys)).toEqual([['k1']]);
    expect(queue.busyLanes).toBe(1);
    await endNext();
    expect(await answer).toBe('done k1');
    expect(queue.busyLanes).toBe(0);
  });

  it('runs the writes that queued behind a lane in flight together, in arrival order, never two with one key in a batch', async () => {
    const { runs, settle, endNext } = fakeQueue({ maxBatch: 3 });
    const answers = ['k1', 'k2', 'k3', 'k2', 'k4', 'k5', 'k6'].map((key) => settle({ lane: 'a', key }));
    await endNext();
    await endNext();
    await endNext();
    await endNext();
    expect(runs.map((run) => run.keys)).toEqual([['k1'], ['k2', 'k3'], ['k2', 'k4', 'k5'], ['k6']]);
    expect(await Promise.all(answers)).toEqual(['k1', 'k2', 'k3', 'k2', 'k4', 'k5', 'k6'].map((key) => `done ${key}`));
  });

  it('keeps at most `concurrency` transactions in flight; lanes waiting for one take turns in the order they became ready', async () => {
    const { runs, settle, endNext, queue } = fakeQueue({ concurrency: 2 });
    const answers = ['a', 'b', 'c', 'd'].map((lane) => settle({ lane, key: `${lane}1` }));
    expect(runs.map((run) => run.keys)).toEqual([['a1'], ['b1']]);
    expect(queue.stats).toMatchObject({ inFlight: 2, waiting: 2 });
    await endNext();
    expect(runs.map((run) => run.keys)).toEqual([['a1'], ['b1'], ['c1']]);
    await endNext();
    await endNext();
    await endNext();
    expect(await Promise.all(answers)).toEqual(['done a1', 'done b1', 'done c1', 'done d1']);
    expect(queue.stats).toMatchObject({ inFlight: 0, waiting: 0, overloaded: 0 });
  });

  it('runs lone writes of one group waiting for a slot together: never two with one key, nor a lane with more waiting, nor another group', async () => {
    const { runs, settle, endNext, queue } = fakeQueue({ concurrency: 1, maxBatch: 4 });
    const answers = [
      { lane: 'a', key: 'a1', group: 'org1' },
      { lane: 'b', key: 'b1', group: 'org1' },
      { lane: 'c', key: 'c1', group: 'org1' },
      { lane: 'c', key: 'c2', group: 'org1' },
      { lane: 'd', key: 'b1', group: 'org1' },
      { lane: 'e', key: 'e1', group: 'org2' },
      { lane: 'f', key: 'f1' },
      { lane: 'g', key: 'g1', group: 'org1' },
      { lane: 'h', key: 'h1', group: 'org1' },
      { lane: 'i', key: 'i1', group: 'org1' },
    ].map((request) => settle(request));
    expect(runs.map((run) => run.keys)).toEqual([['a1']]);
    await endNext();
    // b takes g, h and i (up to maxBatch), not c (two waiting), d (b's key), e (another group) or f (none).
    expect(runs.map((run) => run.keys)).toEqual([['a1'], ['b1', 'g1', 'h1', 'i1']]);
    expect(queue.stats).toMatchObject({ inFlight: 1 });
    for (let i = 0; i < 5; i += 1) await endNext();
    expect(runs.map((run) => run.keys).slice(2)).toEqual([['c1', 'c2'], ['b1'], ['e1'], ['f1']]);
    expect(await Promise.all(answers)).toEqual(['a1', 'b1', 'c1', 'c2', 'b1', 'e1', 'f1', 'g1', 'h1', 'i1'].map((key) => `done ${key}`));
    expect(queue.busyLanes).toBe(0);
  });

  it('starts writes at the end of the event loop’s turn: lone writes of one group that arrived in it go together, though slots are free', async () => {
    const { runs, settle, endNext, holdTurns, runTurn, queue } = fakeQueue({ concurrency: 4 });
    holdTurns();
    const answers = ['a', 'b', 'c'].map((lane) => settle({ lane, key: `${lane}1`, group: 'org1' }));
    answers.push(settle({ lane: 'd', key: 'd1' }));
    expect(runs).toEqual([]);
    expect(queue.stats).toMatchObject({ waiting: 4, inFlight: 0 });
    runTurn();
    expect(runs.map((run) => run.keys)).toEqual([['a1', 'b1', 'c1'], ['d1']]);
    await endNext();
    await endNext();
    expect(await Promise.all(answers)).toEqual(['done a1', 'done b1', 'done c1', 'done d1']);
  });

  it("holds a group's lone writes while its transaction runs, though slots are free, then runs them together; other groups and lanes go on", async () => {
    const { runs, settle, endNext, queue } = fakeQueue({ concurrency: 4 });
    const first = settle({ lane: 'a', key: 'a1', group: 'org1' });
    expect(runs.map((run) => run.keys)).toEqual([['a1']]);
    const answers = [
      settle({ lane: 'b', key: 'b1', group: 'org1' }),
      settle({ lane: 'c', key: 'c1', group: 'org1' }),
      settle({ lane: 'e', key: 'e1', group: 'org2' }),
      settle({ lane: 'f', key: 'f1' }),
      settle({ lane: 'd', key: 'd1', group: 'org1' }),
    ];
    // org1's three wait for a1's transaction: one commit for them, not three; org2 and the ungrouped lane take slots.
    expect(runs.map((run) => run.keys)).toEqual([['a1'], ['e1'], ['f1']]);
    expect(queue.stats).toMatchObject({ inFlight: 3, waiting: 3 });
    await endNext();
    expect(runs.map((run) => run.keys)).toEqual([['a1'], ['e1'], ['f1'], ['b1', 'c1', 'd1']]);
    for (let i = 0; i < 3; i += 1) await endNext();
    expect(await Promise.all([first, ...answers])).toEqual(['a1', 'b1', 'c1', 'e1', 'f1', 'd1'].map((key) => `done ${key}`));
    expect(queue.stats).toMatchObject({ inFlight: 0, waiting: 0 });
  });

  it('lets joinedPerGroup transactions of one group run at once', async () => {
    const { runs, settle, endNext } = fakeQueue({ concurrency: 4, joinedPerGroup: 2 });
    const answers = ['a', 'b', 'c'].map((lane) => settle({ lane, key: `${lane}1`, group: 'org1' }));
    expect(runs.map((run) => run.keys)).toEqual([['a1'], ['b1']]);
    for (let i = 0; i < 3; i += 1) await endNext();
    expect(runs.map((run) => run.keys)).toEqual([['a1'], ['b1'], ['c1']]);
    expect(await Promise.all(answers)).toEqual(['done a1', 'done b1', 'done c1']);
  });

  it('refuses a write on arrival, before it waits, when its queue cannot reach the database within maxWaitMs, and says how long it would wait', async () => {
    const { runs, settle, endNext, advance, queue } = fakeQueue({ maxBatch: 2, concurrency: 1, maxWaitMs: 3000 });
    // Transactions measured at 1 s each (the database is slow): the average climbs from its first guess.
    for (let i = 0; i < 12; i += 1) {
      const answer = settle({ lane: 'a', key: `warm${i}` });
      advance(1000);
      await endNext();
      expect(await answer).toBe(`done warm${i}`);
    }
    expect(queue.stats.transactionMs).toBeGreaterThan(900);
    // One in flight, then queued writes: each batch of two ahead is about a second more.
    const accepted = ['k1', 'k2', 'k3', 'k4', 'k5'].map((key) => settle({ lane: 'a', key }));
    const refused = await settle({ lane: 'a', key: 'k6' });
    expect(refused).toMatch(/^overloaded: about [34]\d{3} ms$/);
    expect(runs.at(-1)?.keys).toEqual(['k1']);
    expect(runs.flatMap((run) => run.keys)).not.toContain('k6');
    expect(queue.stats.overloaded).toBe(1);
    // Another lane has only the transaction in flight ahead of it (lanes take turns): accepted, and run next.
    const other = settle({ lane: 'b', key: 'b1' });
    for (let i = 0; i < 4; i += 1) await endNext();
    expect(runs.slice(-4).map((run) => run.keys)).toEqual([['k1'], ['b1'], ['k2', 'k3'], ['k4', 'k5']]);
    expect(await Promise.all([...accepted, other])).toEqual(['k1', 'k2', 'k3', 'k4', 'k5', 'b1'].map((key) => `done ${key}`));
    // Idle again: a write is never refused on a slow average alone (nothing is ahead of it).
    const idle = settle({ lane: 'c', key: 'c1' });
    await endNext();
    expect(await idle).toBe('done c1');
  });

  it('answers a queued write that waited past maxWaitMs without running it (the database slowed after it arrived)', async () => {
    const { runs, settle, endNext, advance } = fakeQueue({ maxWaitMs: 2000 });
    const first = settle({ lane: 'a', key: 'k1' });
    const queued = settle({ lane: 'a', key: 'k2' });
    advance(2500);
    await endNext();
    expect(await first).toBe('done k1');
    expect(await queued).toBe('waited 2500 ms');
    expect(runs.map((run) => run.keys)).toEqual([['k1']]);
  });

  it('keeps a joined batch to what fits in half its budget once writes are slow, so one slow commit makes few answers unknown, not twenty', async () => {
    const { runs, settle, endNext, advance, holdTurns, runTurn } = fakeQueue({ concurrency: 1, budgetMs: 2000, maxWaitMs: 60_000 });
    // One lone write measured at 400 ms (a database under load).
    const warm = settle({ lane: 'warm', key: 'w', group: 'org' });
    advance(400);
    await endNext();
    expect(await warm).toBe('done w');
    // 20 lone writes of one organization to 20 limits arrive together: at most 1000 / 400 = 2 per transaction.
    holdTurns();
    const answers = Array.from({ length: 20 }, (_, i) => settle({ lane: `l${i}`, key: `k${i}`, group: 'org' }));
    runTurn();
    // Each write costs the database 400 ms.
    for (let i = 0; i < 10; i += 1) {
      advance(400 * (runs.at(-1)?.keys.length ?? 0));
      await endNext();
    }
    expect(runs.slice(1).map((run) => run.keys.length)).toEqual(Array.from({ length: 10 }, () => 2));
    expect(await Promise.all(answers)).toEqual(Array.from({ length: 20 }, (_, i) => `done k${i}`));
  });

  it('joins up to maxBatch lone writes while writes are fast (the bound only shrinks a batch that would not fit)', async () => {
    const { runs, settle, endNext, advance, holdTurns, runTurn } = fakeQueue({ concurrency: 1, budgetMs: 2000 });
    holdTurns();
    const answers = Array.from({ length: 20 }, (_, i) => settle({ lane: `l${i}`, key: `k${i}`, group: 'org' }));
    runTurn();
    advance(20);
    await endNext();
    expect(runs.map((run) => run.keys.length)).toEqual([20]);
    expect(await Promise.all(answers)).toHaveLength(20);
  });

  it("gives a tenant with nothing in flight the next slot, and does not refuse its write for another tenant's flood of lanes", async () => {
    const { runs, settle, endNext, advance } = fakeQueue({ concurrency: 1, maxWaitMs: 3000 });
    // Transactions measured at 1 s each.
    for (let i = 0; i < 12; i += 1) {
      const answer = settle({ lane: 'warm', key: `warm${i}`, tenant: 'flood' });
      advance(1000);
      await endNext();
      await answer;
    }
    const flood = Array.from({ length: 4 }, (_, i) => settle({ lane: `f${i}`, key: `f${i}`, tenant: 'flood' }));
    // The flood's lanes ahead would take about 4 s: a fifth is refused on arrival.
    expect(await settle({ lane: 'f4', key: 'f4', tenant: 'flood' })).toMatch(/^overloaded/);
    // Another tenant's write is not: it waits for the one transaction in flight, then runs before the flood's lanes.
    const quiet = settle({ lane: 'q', key: 'q1', tenant: 'quiet' });
    for (let i = 0; i < 5; i += 1) await endNext();
    expect(runs.slice(-5).map((run) => run.keys)).toEqual([['f0'], ['q1'], ['f1'], ['f2'], ['f3']]);
    expect(await Promise.all([...flood, quiet])).toEqual(['f0', 'f1', 'f2', 'f3', 'q1'].map((key) => `done ${key}`));
  });
});
