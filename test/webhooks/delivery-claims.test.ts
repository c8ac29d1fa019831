import { expect, it } from 'vitest';
import { publishAllEvents } from '../../src/events/publish-events.js';
import type { Store } from '../../src/store/store.js';
import type { AttemptResult } from '../../src/webhooks/attempt.js';
import { claimDueDeliveries, type ClaimLimits } from '../../src/webhooks/delivery-claims.js';
import { recordAttempts } from '../../src/webhooks/delivery-record.js';
import { creditLimit, insertCreditLimits } from '../helpers/records.js';
import { describeEachStore } from '../helpers/stores.js';
import { createTenant } from '../helpers/tenants.js';
import { attemptsOf, deliveriesOf, insertEndpoint } from './deliverer-helpers.js';

const SUCCESS: AttemptResult = { ok: true, status: 204, durationMs: 3, error: null, failure: null, responseBody: '' };
const RECORD = { retryDelayMs: null, failingDisableMs: 1e9 };

describeEachStore('claiming a batch of webhook deliveries', (store, kind) => {
  async function dueDeliveries(events: number) {
    const tenant = await createTenant(store(), 'Claimed batch', 'write');
    const endpoint = await insertEndpoint(store(), tenant.org.id, 'http://127.0.0.1:9/hook', ['credit_limit.created']);
    await insertCreditLimits(store(), tenant.org.id, Array.from({ length: events }, () => creditLimit()));
    await publishAllEvents(store(), tenant.org.id);
    return { orgId: tenant.org.id, endpoint };
  }
  const limits = (nodeId: string, claimMs = 30_000): ClaimLimits => ({ nodeId, claimMs, max: 32, perEndpoint: () => 32 });

  it('claims each due delivery once, with its event and its endpoint’s address and secret', async () => {
    const { orgId, endpoint } = await dueDeliveries(5);
    const claims = await claimDueDeliveries(store(), orgId, limits('node-a'));

    expect(claims).toHaveLength(5);
    expect(new Set(claims.map((claim) => claim.deliveryId)).size).toBe(5);
    expect(new Set(claims.map((claim) => claim.event.uid)).size).toBe(5);
    for (const claim of claims) {
      expect(claim).toMatchObject({ endpointId: endpoint.id, url: 'http://127.0.0.1:9/hook', attempt: 1, event: { type: 'credit_limit.created' } });
      expect(claim.endpoint.secret_ciphertext).toBeTruthy();
    }
    // Oldest first, as they came due.
    expect(claims.map((claim) => claim.event.created_at)).toEqual(claims.map((claim) => claim.event.created_at).sort());
    expect(await claimDueDeliveries(store(), orgId, limits('node-b'))).toEqual([]);
    expect((await deliveriesOf(store(), orgId)).map((d) => d.claimed_by)).toEqual(Array(5).fill('node-a'));
  });

  it('leaves a batch its node claimed and never recorded (it died) to be claimed again once the claims expire, then delivered once', async () => {
    const { orgId } = await dueDeliveries(4);
    const lost = await claimDueDeliveries(store(), orgId, limits('node-a', 300));
    expect(lost).toHaveLength(4);
    expect(await claimDueDeliveries(store(), orgId, limits('node-b'))).toEqual([]);

    await new Promise((resolve) => setTimeout(resolve, 400));
    const again = await claimDueDeliveries(store(), orgId, limits('node-b'));
    expect(again.map((claim) => claim.deliveryId).sort()).toEqual(lost.map((claim) => claim.deliveryId).sort());
    // Never recorded: the same attempt again.
    expect(again.map((claim) => claim.attempt)).toEqual([1, 1, 1, 1]);

    const recorded = await recordAttempts(store(), again.map((claim) => ({ claim, result: SUCCESS, options: { ...RECORD, nodeId: 'node-b' } })));
    expect(recorded.map((r) => r.state)).toEqual(Array(4).fill('delivered'));
    // node-a's attempts, recorded late (it was only slow), deliver nothing more.
    const late = await recordAttempts(store(), lost.map((claim) => ({ claim, result: SUCCESS, options: { ...RECORD, nodeId: 'node-a' } })));
    expect(late.map((r) => r.state)).toEqual(Array(4).fill('not_ours'));
    expect((await deliveriesOf(store(), orgId)).map((d) => [d.state, d.attempts, d.claimed_by])).toEqual(Array(4).fill(['delivered', 1, null]));
    expect(await claimDueDeliveries(store(), orgId, limits('node-c'))).toEqual([]);
    expect(await attemptsOf(store(), orgId)).toHaveLength(8);
  });

  // PGlite runs one statement at a time: no other writer can come between the choice and the claim there.
  it.skipIf(kind === 'pglite')('leaves out a delivery another writer decided between the choice and the claim, and claims the rest', async () => {
    const { orgId } = await dueDeliveries(3);
    const [first] = await deliveriesOf(store(), orgId);
    let decided = false;
    const interfering: Store = {
      ...store(),
      transaction: (fn, options) =>
        store().transaction(
          (tx) =>
            fn({
              ...tx,
              query: async (sql, params, queryOptions) => {
                const rows = await tx.query(sql, params, queryOptions);
                if (sql.includes('LIMIT least') && !decided) {
                  decided = true;
                  // Another connection: as another node's recording would, after this transaction chose it.
                  await store().query(`UPDATE webhook_deliveries SET state = 'delivered', attempts = 1 WHERE org_id = $1 AND id = $2`, [orgId, first!.id]);
                }
                return rows as never;
              },
              exec: (sql) => tx.exec(sql),
              copyFrom: (target, chunks) => tx.copyFrom(target, chunks),
              queryAtCommit: (sql, params) => tx.queryAtCommit(sql, params),
              commitWith: (statements) => tx.commitWith(statements),
            }),
          options,
        ),
    };
    const claims = await claimDueDeliveries(interfering, orgId, limits('node-a'));
    expect(decided).toBe(true);
    expect(claims.map((claim) => claim.deliveryId)).not.toContain(first!.id);
    expect(claims).toHaveLength(2);
    expect((await deliveriesOf(store(), orgId)).map((d) => [d.state, d.claimed_by])).toEqual([
      ['delivered', null],
      ['pending', 'node-a'],
      ['pending', 'node-a'],
    ]);
  });
});
