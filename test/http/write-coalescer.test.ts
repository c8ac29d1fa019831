import { describe, expect, it } from 'vitest';
import { WriteCoalescer, type Settled } from '../../src/http/write-coalescer.js';
import { DatabaseBudget } from '../../src/store/database-budget.js';

interface Req {
  readonly lane: string;
  readonly key: string;
  /** Thrown when run: alone it rejects the request, in a batch it fails the batch. */
  readonly fails?: boolean;
  /** Thrown when run, as an error that answers every request of a batch (the database is unreachable). */
  readonly unreachable?: boolean;
  /** A batch this request heads runs out of the head's database budget. */
  readonly headRunsOut?: boolean;
  readonly budget?: DatabaseBudget;
}

class Unreachable extends Error {}
class OutOfTime extends Unreachable {}

/** A fake store: records every call; each call's promise is settled by the test (release). */
function fakeWork(maxBatch: number) {
  const calls: { kind: 'one' | 'many'; keys: string[]; release: () => void }[] = [];
  const call = <T>(kind: 'one' | 'many', requests: readonly Req[], answer: () => T): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      calls.push({
        kind,
        keys: requests.map((r) => r.key),
        release: () => {
          try {
            resolve(answer());
          } catch (error) {
            reject(error);
          }
        },
      });
    });
  const coalescer = new WriteCoalescer<Req, string>(
    {
      laneOf: (r) => r.lane,
      conflictKeyOf: (r) => r.key,
      one: (r) =>
        call('one', [r], () => {
          if (r.unreachable) throw new Unreachable(`unreachable ${r.key}`);
          if (r.fails) throw new Error(`failed ${r.key}`);
          return `alone ${r.key}`;
        }),
      many: (rs) =>
        call('many', rs, (): Settled<string>[] => {
          if (rs.some((r) => r.unreachable)) throw new Unreachable('unreachable batch');
          if (rs[0]?.headRunsOut) throw new OutOfTime(`budget of ${rs[0].key} ran out`);
          if (rs.some((r) => r.fails)) throw new Error('batch failed');
          return rs.map((r) => (r.key.startsWith('reused') ? { ok: false, error: new Error(`422 ${r.key}`) } : { ok: true, value: `batched ${r.key}` }));
        }),
      failsEveryRequest: (error) => error instanceof Unreachable,
      isOutOfTime: (error) => error instanceof OutOfTime,
      timeLeft: (r) => r.budget?.remaining(),
      outOfTime: () => new OutOfTime('budget ran out in the queue'),
    },
    maxBatch,
  );
  /** Lets the coalescer's continuations run (each release settles a promise it awaits). */
  const tick = () => new Promise<void>((resolve) => setImmediate(resolve));
  const releaseNext = async () => {
    const next = calls.find((c) => !('done' in c));
    if (!next) throw new Error('no call in flight');
    Object.assign(next, { done: true });
    next.release();
    await tick();
  };
  return { coalescer, calls, releaseNext, tick };
}

const settle = (p: Promise<string>) => p.then((value) => `ok: ${value}`, (error: Error) => `error: ${error.message}`);

describe('WriteCoalescer', () => {
  it('runs a write to an idle lane at once and alone, and forgets the lane when it is answered', async () => {
    const { coalescer, calls, releaseNext } = fakeWork(32);
    const answer = settle(coalescer.run({ lane: 'a', key: 'k1' }));
    expect(calls.map((c) => [c.kind, c.keys])).toEqual([['one', ['k1']]]);
    expect(coalescer.busyLanes).toBe(1);
    await releaseNext();
    expect(await answer).toBe('ok: alone k1');
    expect(coalescer.busyLanes).toBe(0);
  });

  it('queues writes behind the lane in flight and runs them as one batch in arrival order; other lanes do not wait', async () => {
    const { coalescer, calls, releaseNext } = fakeWork(32);
    const answers = ['k1', 'k2', 'k3', 'k4'].map((key) => settle(coalescer.run({ lane: 'a', key })));
    const other = settle(coalescer.run({ lane: 'b', key: 'k1' }));
    expect(calls.map((c) => [c.kind, c.keys])).toEqual([
      ['one', ['k1']],
      ['one', ['k1']],
    ]);
    await releaseNext();
    expect(calls.map((c) => [c.kind, c.keys])[2]).toEqual(['many', ['k2', 'k3', 'k4']]);
    await releaseNext();
    await releaseNext();
    expect(await Promise.all([...answers, other])).toEqual(['ok: alone k1', 'ok: batched k2', 'ok: batched k3', 'ok: batched k4', 'ok: alone k1']);
    expect(calls).toHaveLength(3);
    expect(coalescer.busyLanes).toBe(0);
  });

  it('never puts two writes with the same key in one batch: the batch ends before the second, which runs after it', async () => {
    const { coalescer, calls, releaseNext } = fakeWork(32);
    const answers = ['k0', 'k1', 'k2', 'k1', 'k3'].map((key) => settle(coalescer.run({ lane: 'a', key })));
    await releaseNext();
    await releaseNext();
    await releaseNext();
    expect(calls.map((c) => [c.kind, c.keys])).toEqual([
      ['one', ['k0']],
      ['many', ['k1', 'k2']],
      ['many', ['k1', 'k3']],
    ]);
    expect(await Promise.all(answers)).toEqual(['ok: alone k0', 'ok: batched k1', 'ok: batched k2', 'ok: batched k1', 'ok: batched k3']);
  });

  it('bounds a batch to maxBatch writes', async () => {
    const { coalescer, calls, releaseNext } = fakeWork(2);
    const answers = ['k0', 'k1', 'k2', 'k3', 'k4'].map((key) => settle(coalescer.run({ lane: 'a', key })));
    for (let i = 0; i < 3; i += 1) await releaseNext();
    expect(calls.map((c) => c.keys)).toEqual([['k0'], ['k1', 'k2'], ['k3', 'k4']]);
    expect(await Promise.all(answers)).toHaveLength(5);
    expect(coalescer.busyLanes).toBe(0);
  });

  it('answers an error a batch settles for one write to that write only', async () => {
    const { coalescer, releaseNext } = fakeWork(32);
    const answers = ['k0', 'k1', 'reused-k2', 'k3'].map((key) => settle(coalescer.run({ lane: 'a', key })));
    await releaseNext();
    await releaseNext();
    expect(await Promise.all(answers)).toEqual(['ok: alone k0', 'ok: batched k1', 'error: 422 reused-k2', 'ok: batched k3']);
  });

  it('runs each write of a batch that threw on its own, in arrival order: only the failing one fails', async () => {
    const { coalescer, calls, releaseNext, tick } = fakeWork(32);
    const answers = [{ key: 'k0' }, { key: 'k1' }, { key: 'k2', fails: true }, { key: 'k3' }].map((r) => settle(coalescer.run({ lane: 'a', ...r })));
    const later = settle(coalescer.run({ lane: 'a', key: 'k4' }));
    await releaseNext(); // k0 alone
    await releaseNext(); // the batch k1..k4 throws
    for (let i = 0; i < 4; i += 1) await releaseNext();
    await tick();
    expect(calls.map((c) => [c.kind, c.keys])).toEqual([
      ['one', ['k0']],
      ['many', ['k1', 'k2', 'k3', 'k4']],
      ['one', ['k1']],
      ['one', ['k2']],
      ['one', ['k3']],
      ['one', ['k4']],
    ]);
    expect(await Promise.all([...answers, later])).toEqual(['ok: alone k0', 'ok: alone k1', 'error: failed k2', 'ok: alone k3', 'ok: alone k4']);
    expect(coalescer.busyLanes).toBe(0);
  });

  it('answers every write of a batch with what it threw when that answers them all, without running any again', async () => {
    const { coalescer, calls, releaseNext, tick } = fakeWork(32);
    const first = settle(coalescer.run({ lane: 'a', key: 'k0' }));
    const batched = [{ key: 'k1' }, { key: 'k2', unreachable: true }, { key: 'k3' }].map((r) => settle(coalescer.run({ lane: 'a', ...r })));
    await releaseNext(); // k0 alone
    await releaseNext(); // the batch k1..k3: the database is unreachable
    await tick();
    expect(calls.map((c) => [c.kind, c.keys])).toEqual([
      ['one', ['k0']],
      ['many', ['k1', 'k2', 'k3']],
    ]);
    expect(await Promise.all([first, ...batched])).toEqual(['ok: alone k0', 'error: unreachable batch', 'error: unreachable batch', 'error: unreachable batch']);
    expect(coalescer.busyLanes).toBe(0);
  });

  it('keeps no lane after a lone write that fails, and the next write to it runs at once', async () => {
    const { coalescer, calls, releaseNext } = fakeWork(32);
    const failed = settle(coalescer.run({ lane: 'a', key: 'k0', fails: true }));
    await releaseNext();
    expect(await failed).toBe('error: failed k0');
    expect(coalescer.busyLanes).toBe(0);
    const next = settle(coalescer.run({ lane: 'a', key: 'k1' }));
    expect(calls.at(-1)).toMatchObject({ kind: 'one', keys: ['k1'] });
    await releaseNext();
    expect(await next).toBe('ok: alone k1');
  });

  it('answers a queued write whose own database budget runs out while the write ahead hangs, without ever running it', async () => {
    const { coalescer, calls } = fakeWork(32);
    void coalescer.run({ lane: 'a', key: 'hangs' }); // never released: a frozen database
    const queued = ['q1', 'q2', 'q3'].map((key) => settle(coalescer.run({ lane: 'a', key, budget: new DatabaseBudget(50) })));
    expect(await Promise.all(queued)).toEqual(Array(3).fill('error: budget ran out in the queue'));
    expect(calls.map((c) => c.keys)).toEqual([['hangs']]);
  });

  it("answers only the first write of a batch that ran out of that write's budget; the others run again, with their own", async () => {
    const { coalescer, calls, releaseNext } = fakeWork(32);
    const first = settle(coalescer.run({ lane: 'a', key: 'k0' }));
    const budgeted = (key: string, headRunsOut = false) => settle(coalescer.run({ lane: 'a', key, headRunsOut, budget: new DatabaseBudget(60_000) }));
    const answers = [budgeted('k1', true), budgeted('k2'), budgeted('k3')];
    await releaseNext();
    expect(await first).toBe('ok: alone k0');
    expect(calls.map((c) => [c.kind, c.keys])).toEqual([
      ['one', ['k0']],
      ['many', ['k1', 'k2', 'k3']],
    ]);
    await releaseNext();
    expect(calls.at(-1)).toMatchObject({ kind: 'many', keys: ['k2', 'k3'] });
    await releaseNext();
    expect(await Promise.all(answers)).toEqual(['error: budget of k1 ran out', 'ok: batched k2', 'ok: batched k3']);
    expect(coalescer.busyLanes).toBe(0);
  });

  it('refuses a maxBatch that is not a positive integer', () => {
    expect(() => fakeWork(0)).toThrow(RangeError);
  });
});
