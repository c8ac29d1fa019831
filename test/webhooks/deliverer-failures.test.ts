import { afterEach, expect, it } from 'vitest';
import { publishAllEvents } from '../../src/events/publish-events.js';
import { claimDueDeliveries } from '../../src/webhooks/delivery-claims.js';
import { recordAttempt } from '../../src/webhooks/delivery-record.js';
import { creditLimit, insertCreditLimits } from '../helpers/records.js';
import { describeEachStore } from '../helpers/stores.js';
import { createTenant } from '../helpers/tenants.js';
import { attemptsOf, deliveriesOf, insertEndpoint, newDeliverer } from './deliverer-helpers.js';
import { startHttpReceiver, type Receiver } from './receivers.js';

const receivers: Receiver[] = [];
afterEach(async () => {
  await Promise.all(receivers.splice(0).map((receiver) => receiver.close()));
});

async function receiver(status: number): Promise<Receiver> {
  const started = await startHttpReceiver((_request, response) => response.writeHead(status).end());
  receivers.push(started);
  return started;
}

describeEachStore('the webhook deliverer when endpoints fail or nodes die', (store) => {
  /** An organization whose endpoint (at `url`) has `events` credit_limit.created deliveries due. */
  async function organizationWithDeliveries(url: string, events = 1) {
    const tenant = await createTenant(store(), 'Hooks', 'write');
    const endpoint = await insertEndpoint(store(), tenant.org.id, url);
    await insertCreditLimits(store(), tenant.org.id, Array.from({ length: events }, () => creditLimit()));
    await publishAllEvents(store(), tenant.org.id);
    return { orgId: tenant.org.id, endpoint };
  }

  it('disables an endpoint whose every attempt has failed for 3 days, and cancels its pending deliveries', async () => {
    const failing = await receiver(503);
    const { orgId, endpoint } = await organizationWithDeliveries(`http://127.0.0.1:${failing.port}/`, 6);
    await store().query(`UPDATE webhook_endpoints SET failing_since = now() - interval '3 days 1 hour' WHERE org_id = $1`, [orgId]);
    const deliverer = newDeliverer(store(), { maxInFlightPerEndpoint: 1, claimsPerTurn: 1 });
    await deliverer.deliverDue();

    const [state] = await store().query<{ disabled: boolean; disabled_reason: string }>(
      'SELECT disabled, disabled_reason FROM webhook_endpoints WHERE org_id = $1 AND id = $2', [orgId, endpoint.id]);
    expect(state).toEqual({ disabled: true, disabled_reason: 'failing' });
    expect(failing.requests).toHaveLength(1);
    expect((await deliveriesOf(store(), orgId)).map((d) => d.state)).toEqual(Array(6).fill('cancelled'));
    expect((await attemptsOf(store(), orgId)).map((a) => [a.status_code, a.next_in_seconds])).toEqual([[503, null]]);
    await deliverer.deliverDue();
    expect(failing.requests).toHaveLength(1);
  });

  it('keeps an endpoint that has failed for less than 3 days, retrying it', async () => {
    const failing = await receiver(500);
    const { orgId, endpoint } = await organizationWithDeliveries(`http://127.0.0.1:${failing.port}/`);
    await store().query(`UPDATE webhook_endpoints SET failing_since = now() - interval '2 days 23 hours' WHERE org_id = $1`, [orgId]);
    await newDeliverer(store()).deliverDue();
    const [state] = await store().query<{ disabled: boolean; since_days: string }>(
      `SELECT disabled, extract(day FROM now() - failing_since)::text AS since_days FROM webhook_endpoints WHERE org_id = $1 AND id = $2`, [orgId, endpoint.id]);
    expect(state).toEqual({ disabled: false, since_days: '2' });
    expect((await deliveriesOf(store(), orgId)).map((d) => [d.state, d.attempts])).toEqual([['pending', 1]]);
  });

  it('takes over the claim of a node that died once it has expired, never one still held', async () => {
    const hits = await receiver(200);
    const { orgId } = await organizationWithDeliveries(`http://127.0.0.1:${hits.port}/`, 2);
    const [held, expired] = await deliveriesOf(store(), orgId);
    await store().query(`UPDATE webhook_deliveries SET claimed_by = 'alive', claimed_until = now() + interval '1 minute' WHERE org_id = $1 AND id = $2`, [orgId, held!.id]);
    await store().query(`UPDATE webhook_deliveries SET claimed_by = 'dead', claimed_until = now() - interval '1 second' WHERE org_id = $1 AND id = $2`, [orgId, expired!.id]);
    await newDeliverer(store()).deliverDue();
    expect(hits.requests).toHaveLength(1);
    expect((await deliveriesOf(store(), orgId)).map((d) => [d.id, d.state, d.claimed_by])).toEqual([
      [held!.id, 'pending', 'alive'],
      [expired!.id, 'delivered', null],
    ]);
  });

  it('drops the claimed work of an endpoint deleted or disabled while its attempt ran, and claims none of theirs', async () => {
    const hits = await receiver(500);
    const deleted = await organizationWithDeliveries(`http://127.0.0.1:${hits.port}/`, 1);
    const disabled = await organizationWithDeliveries(`http://127.0.0.1:${hits.port}/`, 2);
    const limits = { nodeId: 'node-a', claimMs: 30_000, max: 1, perEndpoint: () => 4 };
    // Claimed, as a node does before its attempt; the endpoints change while the attempt runs.
    const [first] = await claimDueDeliveries(store(), deleted.orgId, limits);
    const [second] = await claimDueDeliveries(store(), disabled.orgId, limits);
    await store().query('DELETE FROM webhook_endpoints WHERE org_id = $1', [deleted.orgId]);
    await store().query(`UPDATE webhook_endpoints SET disabled = true, disabled_reason = 'requested' WHERE org_id = $1`, [disabled.orgId]);
    const failure = { ok: false, status: 500, durationMs: 3, error: 'the receiver answered 500', failure: 'http_status', responseBody: '' } as const;
    const options = { nodeId: 'node-a', retryDelayMs: 5000, failingDisableMs: 1e9 };
    expect(await recordAttempt(store(), first!, failure, options)).toEqual({ state: 'cancelled', endpointDisabled: false });
    expect(await recordAttempt(store(), second!, failure, options)).toEqual({ state: 'cancelled', endpointDisabled: false });
    expect(await attemptsOf(store(), deleted.orgId)).toEqual([]);
    expect((await attemptsOf(store(), disabled.orgId)).map((a) => [a.status_code, a.next_in_seconds])).toEqual([[500, null]]);
    // The disabled endpoint's other delivery is never claimed.
    await store().query('UPDATE webhook_deliveries SET claimed_until = NULL WHERE org_id = $1', [disabled.orgId]);
    await newDeliverer(store()).deliverDue();
    expect(hits.requests).toHaveLength(0);
    expect((await deliveriesOf(store(), disabled.orgId)).map((d) => d.state)).toEqual(['cancelled', 'pending']);
  });
});
