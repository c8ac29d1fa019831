import { expect, it } from 'vitest';
import { publishAllEvents } from '../../src/events/publish-events.js';
import type { AttemptResult } from '../../src/webhooks/attempt.js';
import { claimDueDeliveries, type ClaimedDelivery } from '../../src/webhooks/delivery-claims.js';
import { recordAttempts, type AttemptToRecord } from '../../src/webhooks/delivery-record.js';
import { creditLimit, insertCreditLimits } from '../helpers/records.js';
import { describeEachStore } from '../helpers/stores.js';
import { createTenant } from '../helpers/tenants.js';
import { attemptsOf, deliveriesOf, insertEndpoint } from './deliverer-helpers.js';

const OPTIONS = { nodeId: 'node-a', retryDelayMs: 60_000, failingDisableMs: 1e9 };
const SUCCESS: AttemptResult = { ok: true, status: 204, durationMs: 4, error: null, failure: null, responseBody: 'thanks' };
const FAILURE: AttemptResult = { ok: false, status: 500, durationMs: 6, error: 'the receiver answered 500', failure: 'http_status', responseBody: '' };

describeEachStore('recording a batch of webhook attempts', (store) => {
  /** An organization with one endpoint and `events` of its deliveries claimed by node-a, oldest first. */
  async function claimedDeliveries(events: number) {
    const tenant = await createTenant(store(), 'Recorded batch', 'write');
    const endpoint = await insertEndpoint(store(), tenant.org.id, 'http://127.0.0.1:9/', ['credit_limit.created']);
    await insertCreditLimits(store(), tenant.org.id, Array.from({ length: events }, () => creditLimit()));
    await publishAllEvents(store(), tenant.org.id);
    const claims = await claimDueDeliveries(store(), tenant.org.id, { nodeId: 'node-a', claimMs: 30_000, max: events, perEndpoint: () => events });
    expect(claims).toHaveLength(events);
    return { orgId: tenant.org.id, endpoint, claims: claims.sort((a, b) => Number(a.deliveryId) - Number(b.deliveryId)) };
  }

  const failingSince = async (orgId: string) =>
    (await store().query<{ failing: boolean }>('SELECT failing_since IS NOT NULL AS failing FROM webhook_endpoints WHERE org_id = $1', [orgId]))[0]?.failing;

  it('records successes and failures of several organizations in one commit, each as it ended and in the order they ended', async () => {
    const a = await claimedDeliveries(4);
    const b = await claimedDeliveries(1);
    const gone = await claimedDeliveries(1);
    // The streak a's endpoint was on: its first success clears it, the failure starts one, the success after clears it again.
    await store().query(`UPDATE webhook_endpoints SET failing_since = now() - interval '1 hour' WHERE org_id = $1`, [a.orgId]);
    // Another node delivered a's last one meanwhile; gone's endpoint was deleted while its attempt ran.
    await store().query(`UPDATE webhook_deliveries SET state = 'delivered', claimed_by = NULL, claimed_until = NULL WHERE org_id = $1 AND id = $2`, [a.orgId, a.claims[3]!.deliveryId]);
    await store().query('DELETE FROM webhook_endpoints WHERE org_id = $1', [gone.orgId]);
    await store().query(`UPDATE webhook_deliveries SET state = 'cancelled' WHERE org_id = $1`, [gone.orgId]);

    const recorded = await recordAttempts(store(), [
      attempt(a.claims[0]!, SUCCESS),
      attempt(b.claims[0]!, SUCCESS),
      attempt(a.claims[1]!, FAILURE),
      attempt(gone.claims[0]!, SUCCESS),
      attempt(a.claims[2]!, SUCCESS),
      attempt(a.claims[3]!, SUCCESS),
    ]);

    expect(recorded.map((r) => r.state)).toEqual(['delivered', 'delivered', 'pending', 'not_ours', 'delivered', 'not_ours']);
    expect(recorded.every((r) => !r.endpointDisabled)).toBe(true);
    expect((await deliveriesOf(store(), a.orgId)).map((d) => [d.state, d.attempts, d.claimed_by])).toEqual([
      ['delivered', 1, null],
      ['pending', 1, null],
      ['delivered', 1, null],
      ['delivered', 0, null],
    ]);
    expect((await deliveriesOf(store(), b.orgId)).map((d) => [d.state, d.attempts])).toEqual([['delivered', 1]]);
    expect(await failingSince(a.orgId)).toBe(false);
    // Every attempt made is listed (the one another node had delivered too), but none of an endpoint that is gone.
    expect((await attemptsOf(store(), a.orgId)).map((row) => [row.event_uid, row.status_code, row.response_body, row.next_in_seconds === null])).toEqual([
      [a.claims[0]!.event.uid, 204, 'thanks', true],
      [a.claims[1]!.event.uid, 500, null, false],
      [a.claims[2]!.event.uid, 204, 'thanks', true],
      [a.claims[3]!.event.uid, 204, 'thanks', true],
    ]);
    expect(await attemptsOf(store(), b.orgId)).toHaveLength(1);
    expect(await attemptsOf(store(), gone.orgId)).toEqual([]);
  });

  it('leaves the streak running when a failure is the last of the batch', async () => {
    const a = await claimedDeliveries(3);
    await recordAttempts(store(), [attempt(a.claims[0]!, SUCCESS), attempt(a.claims[1]!, SUCCESS), attempt(a.claims[2]!, FAILURE)]);
    expect(await failingSince(a.orgId)).toBe(true);
    expect((await deliveriesOf(store(), a.orgId)).map((d) => d.state)).toEqual(['delivered', 'delivered', 'pending']);
  });
});

function attempt(claim: ClaimedDelivery, result: AttemptResult): AttemptToRecord {
  return { claim, result, options: OPTIONS };
}
