import { performance } from 'node:perf_hooks';
import { describe, expect, it } from 'vitest';
import { DatabaseOverloadedError, FairShare } from '../../src/store/fair-share.js';

class Unavailable extends Error {}
const unavailable = () => new Unavailable('unreachable');

describe('FairShare', () => {
  it("gives a freed slot to the organizations waiting in turn: a quiet organization waits for one slot to free, not for a flood's queue", async () => {
    const share = new FairShare({ slots: 1, queuePerTenant: 100 });
    const order: string[] = [];
    const admit = (tenant: string, n: number) => {
      const turn = share.enter(tenant, undefined, unavailable);
      return (turn ?? Promise.resolve()).then(() => order.push(`${tenant}${n}`));
    };
    const flood = Array.from({ length: 6 }, (_, i) => admit('flood', i));
    const quiet = admit('quiet', 0);
    await Promise.resolve();
    expect(order).toEqual(['flood0']);
    for (let i = 0; i < 6; i += 1) {
      share.leave(true);
      await new Promise((resolve) => setImmediate(resolve));
    }
    await Promise.all([...flood, quiet]);
    expect(order.indexOf('quiet0')).toBeLessThanOrEqual(2);
    expect(order).toHaveLength(7);
  });

  it("refuses an organization's query beyond its queue at once (overloaded), while another organization still queues", async () => {
    const share = new FairShare({ slots: 1, queuePerTenant: 2 });
    expect(share.enter('flood', undefined, unavailable)).toBeUndefined();
    const queued = [share.enter('flood', undefined, unavailable), share.enter('flood', undefined, unavailable)];
    const refused = await share.enter('flood', undefined, unavailable)?.catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(DatabaseOverloadedError);
    expect((refused as DatabaseOverloadedError).reason).toBe('queue-full');
    const quiet = share.enter('quiet', undefined, unavailable);
    expect(quiet).toBeInstanceOf(Promise);
    share.leave(true);
    share.leave(true);
    share.leave(true);
    await Promise.all([...queued, quiet]);
    expect(share.refused).toBe(1);
  });

  it('tells a wait that ran out while the database answered others (overloaded) from one while it answered nothing (unavailable)', async () => {
    const share = new FairShare({ slots: 1, queuePerTenant: 10 });
    share.enter('a', undefined, unavailable);
    // The query holding the slot is answered; the slot passes to the next organization's query (still in the database).
    const third = share.enter('c', undefined, unavailable);
    const busy = share.enter('b', performance.now() + 30, unavailable)?.catch((error: unknown) => error);
    share.leave(true);
    expect(await busy).toBeInstanceOf(DatabaseOverloadedError);
    await third;

    const frozen = share.enter('d', performance.now() + 30, unavailable)?.catch((error: unknown) => error);
    expect(await frozen).toBeInstanceOf(Unavailable);
  });
});
