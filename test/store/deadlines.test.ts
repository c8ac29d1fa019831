import { performance } from 'node:perf_hooks';
import { describe, expect, it } from 'vitest';
import { Deadlines } from '../../src/store/deadlines.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const timers = () => process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout').length;

describe('Deadlines', () => {
  it('runs each watch once its deadline passes, in deadline order, whatever order they came in', async () => {
    const deadlines = new Deadlines();
    const fired: string[] = [];
    const start = performance.now();
    const firedAt = new Map<string, number>();
    for (const [name, ms] of [['c', 90], ['a', 30], ['d', 120], ['b', 60]] as const) {
      deadlines.watch(start + ms, () => {
        fired.push(name);
        firedAt.set(name, performance.now() - start);
      });
    }
    await sleep(200);
    expect(fired).toEqual(['a', 'b', 'c', 'd']);
    for (const [name, ms] of [['a', 30], ['b', 60], ['c', 90], ['d', 120]] as const) expect(firedAt.get(name)).toBeGreaterThanOrEqual(ms);
  });

  it('never runs a cancelled watch, nor one cancelled after the earliest (the timer stays set for it)', async () => {
    const deadlines = new Deadlines();
    const fired: string[] = [];
    const now = performance.now();
    const first = deadlines.watch(now + 20, () => fired.push('first'));
    deadlines.watch(now + 40, () => fired.push('second'));
    const third = deadlines.watch(now + 60, () => fired.push('third'));
    deadlines.cancel(first);
    deadlines.cancel(third);
    deadlines.cancel(third);
    await sleep(100);
    expect(fired).toEqual(['second']);
  });

  it('leaves no timer behind once every watch is cancelled or has run', async () => {
    const before = timers();
    const deadlines = new Deadlines();
    const watches = [10, 20, 30].map((ms) => deadlines.watch(performance.now() + ms, () => {}));
    expect(timers()).toBe(before + 1);
    for (const watch of watches) deadlines.cancel(watch);
    expect(timers()).toBe(before);
    deadlines.watch(performance.now() + 5, () => {});
    await sleep(50);
    expect(timers()).toBe(before);
  });
});
