import { afterEach, expect, it } from 'vitest';
import { publishAllEvents } from '../../src/events/publish-events.js';
import type { Statement, Store } from '../../src/store/store.js';
import { creditLimit, insertCreditLimits } from '../helpers/records.js';
import { describeEachStore } from '../helpers/stores.js';
import { createTenant } from '../helpers/tenants.js';
import { attemptsOf, deliveriesOf, insertEndpoint, newDeliverer } from './deliverer-helpers.js';
import { startHttpReceiver, type Receiver } from './receivers.js';

const receivers: Receiver[] = [];
afterEach(async () => {
  await Promise.all(receivers.splice(0).map((receiver) => receiver.close()));
});

/** The store, counting the commits that record attempts; `refuseShared`: a commit of more than one attempt fails. */
function countingCommits(store: Store, refuseShared = false): { store: Store; recordCommits: number[] } {
  const recordCommits: number[] = [];
  // A statement recording successes takes its deliveries as an array (its third parameter); one recording a failure, one delivery.
  const attemptsIn = (statement: Statement) => (Array.isArray(statement.params[2]) ? statement.params[2].length : 1);
  const recording = (statements: readonly Statement[]) =>
    statements.filter((statement) => statement.sql.includes('INSERT INTO webhook_attempts')).reduce((sum, statement) => sum + attemptsIn(statement), 0);
  return {
    recordCommits,
    store: {
      ...store,
      query: (sql, params, options) => store.query(sql, params, options),
      exec: (sql) => store.exec(sql),
      ping: () => store.ping(),
      close: () => store.close(),
      transaction: (fn, options) =>
        store.transaction(
          (tx) =>
            fn({
              ...tx,
              query: (sql, params, queryOptions) => tx.query(sql, params, queryOptions),
              exec: (sql) => tx.exec(sql),
              copyFrom: (target, chunks) => tx.copyFrom(target, chunks),
              queryAtCommit: (sql, params) => tx.queryAtCommit(sql, params),
              commitWith: (statements) => {
                const attempts = recording(statements);
                if (attempts > 0) recordCommits.push(attempts);
                if (refuseShared && attempts > 1) return Promise.reject(new Error('refused: a shared commit'));
                return tx.commitWith(statements);
              },
            }),
          options,
        ),
    },
  };
}

describeEachStore('recording webhook attempts', (store) => {
  async function dueDeliveries(events: number, status: number) {
    const hits = await startHttpReceiver((_request, response) => response.writeHead(status).end());
    receivers.push(hits);
    const tenant = await createTenant(store(), 'Recorded', 'write');
    await insertEndpoint(store(), tenant.org.id, `http://127.0.0.1:${hits.port}/`, ['credit_limit.created']);
    await insertCreditLimits(store(), tenant.org.id, Array.from({ length: events }, () => creditLimit()));
    await publishAllEvents(store(), tenant.org.id);
    return { orgId: tenant.org.id, hits };
  }

  it('records attempts that end together in shared commits, each exactly as it ended', async () => {
    const { orgId, hits } = await dueDeliveries(12, 200);
    const counted = countingCommits(store());
    await newDeliverer(counted.store).deliverDue();

    expect(hits.requests).toHaveLength(12);
    expect((await deliveriesOf(store(), orgId)).map((d) => [d.state, d.attempts, d.claimed_by])).toEqual(Array(12).fill(['delivered', 1, null]));
    expect((await attemptsOf(store(), orgId)).map((a) => [a.attempt, a.status_code])).toEqual(Array(12).fill([1, 200]));
    expect(counted.recordCommits.reduce((sum, n) => sum + n, 0)).toBe(12);
    expect(counted.recordCommits.length).toBeLessThan(12);
  });

  it('records each attempt alone when a shared commit fails, so none is lost', async () => {
    const { orgId, hits } = await dueDeliveries(6, 500);
    const counted = countingCommits(store(), true);
    await newDeliverer(counted.store).deliverDue();

    expect(hits.requests).toHaveLength(6);
    expect(counted.recordCommits.some((n) => n > 1)).toBe(true);
    const deliveries = await deliveriesOf(store(), orgId);
    expect(deliveries.map((d) => [d.state, d.attempts, d.claimed_by])).toEqual(Array(6).fill(['pending', 1, null]));
    expect((await attemptsOf(store(), orgId)).map((a) => [a.attempt, a.status_code, a.error])).toEqual(Array(6).fill([1, 500, 'the receiver answered 500']));
  });
});
