import { afterEach, expect, it } from 'vitest';
import { EventStreamWakeups } from '../../src/events/event-stream-wakeups.js';
import type { Queryable } from '../../src/store/store.js';
import { describeEachStore } from '../helpers/stores.js';

/** Waits until `condition` holds, checking every 10 ms (no deadline of its own: the test's timeout catches a hang). */
async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 10));
}

describeEachStore('EventStreamWakeups polling', (store) => {
  const opened: EventStreamWakeups[] = [];
  afterEach(() => {
    for (const wakeups of opened.splice(0)) wakeups.close();
  });

  /** The store, recording the organization ids each statement on event_streams asked about; `failures` statements fail first. */
  const recording = (failures = 0) => {
    const asked: string[][] = [];
    let failing = failures;
    const db: Queryable = {
      query: async (sql, params, options) => {
        if (sql.includes('event_streams')) {
          asked.push((Array.isArray(params?.[0]) ? params[0] : [params?.[0]]).map(String));
          if (failing > 0) {
            failing -= 1;
            throw new Error('connection terminated');
          }
        }
        return store().query(sql, params, options);
      },
      exec: (sql) => store().exec(sql),
    };
    return { db, asked };
  };
  const follow = (wakeups: EventStreamWakeups, orgIds: readonly string[]) => {
    opened.push(wakeups);
    for (const orgId of orgIds) wakeups.follow(orgId);
  };
  let nextOrg = 900_000;
  const orgs = async (count: number, published = true): Promise<string[]> => {
    const ids = Array.from({ length: count }, () => String((nextOrg += 1)));
    if (published) await store().query('INSERT INTO event_streams (org_id, published_through) SELECT unnest($1::bigint[]), now()', [ids]);
    return ids;
  };

  it('asks about every followed organization in one statement a poll, and wakes each one whose published_through moved', async () => {
    const { db, asked } = recording();
    const wakeups = new EventStreamWakeups(db, { pollIntervalMs: 10 });
    const publishing = await orgs(4);
    const quiet = await orgs(2, false);
    follow(wakeups, [...publishing, ...quiet]);
    // The first look wakes every stream, those of an organization that never published too.
    await until(() => [...publishing, ...quiet].every((orgId) => wakeups.generation(orgId) === 1));
    const [moved, ...unmoved] = publishing;
    await store().query("UPDATE event_streams SET published_through = ((published_through AT TIME ZONE 'UTC') + interval '1 second') AT TIME ZONE 'UTC' WHERE org_id = $1", [moved]);
    await until(() => wakeups.generation(moved!) === 2);
    expect([...unmoved, ...quiet].map((orgId) => wakeups.generation(orgId))).toEqual([1, 1, 1, 1, 1]);
    // One statement each poll, naming all six organizations (it was one statement an organization).
    expect(asked.length).toBeGreaterThanOrEqual(2);
    for (const ids of asked) expect([...ids].sort()).toEqual([...publishing, ...quiet].sort());
  });

  it('asks about at most 1,000 organizations a statement: 2,500 followed are three statements a poll', async () => {
    const { db, asked } = recording();
    const wakeups = new EventStreamWakeups(db, { pollIntervalMs: 10 });
    const followed = await orgs(2500);
    follow(wakeups, followed);
    await until(() => followed.every((orgId) => wakeups.generation(orgId) === 1));
    const firstPoll = asked.slice(0, 3);
    expect(firstPoll.map((ids) => ids.length)).toEqual([1000, 1000, 500]);
    expect(firstPoll.flat().sort()).toEqual([...followed].sort());
  });

  it('skips a poll the database failed and wakes the streams at the next one', async () => {
    const { db, asked } = recording(1);
    const wakeups = new EventStreamWakeups(db, { pollIntervalMs: 10 });
    const followed = await orgs(3);
    follow(wakeups, followed);
    await until(() => followed.every((orgId) => wakeups.generation(orgId) === 1));
    expect(asked.length).toBeGreaterThanOrEqual(2);
  });
});
