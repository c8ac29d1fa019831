import { Registry } from 'prom-client';
import { expect, it } from 'vitest';
import { publishAllEvents } from '../../src/events/publish-events.js';
import { resendEvent } from '../../src/events/resend-event.js';
import { registerWebhookMetrics } from '../../src/metrics/webhook-metrics.js';
import { creditLimit, insertCreditLimits } from '../helpers/records.js';
import { describeEachStore } from '../helpers/stores.js';
import { createTenant } from '../helpers/tenants.js';
import { insertEndpoint, newDeliverer } from '../webhooks/deliverer-helpers.js';
import { startHttpReceiver } from '../webhooks/receivers.js';

describeEachStore('webhook delivery metrics', (store) => {
  it('count attempts by outcome, the lag to a 2xx, and the pending backlog with its most overdue delivery', async () => {
    const ok = await startHttpReceiver((_request, response) => response.writeHead(200).end());
    const failing = await startHttpReceiver((_request, response) => response.writeHead(500).end());
    try {
      const registry = new Registry();
      const tenant = await createTenant(store(), 'Metrics', 'write');
      await insertEndpoint(store(), tenant.org.id, `http://127.0.0.1:${ok.port}/`);
      await insertEndpoint(store(), tenant.org.id, `http://127.0.0.1:${failing.port}/`);
      await insertEndpoint(store(), tenant.org.id, 'http://169.254.169.254/latest/');
      await insertCreditLimits(store(), tenant.org.id, [creditLimit()]);
      await publishAllEvents(store(), tenant.org.id);
      const holder: { inFlight: () => number } = { inFlight: () => 0 };
      const observer = registerWebhookMetrics(registry, store(), () => holder.inFlight());
      const deliverer = newDeliverer(store(), { observer });
      holder.inFlight = () => deliverer.inFlight;
      await deliverer.deliverDue();

      const text = await registry.metrics();
      expect(text).toContain('lending_api_webhook_attempts_total{outcome="delivered"} 1');
      expect(text).toContain('lending_api_webhook_attempts_total{outcome="http_status"} 1');
      expect(text).toContain('lending_api_webhook_attempts_total{outcome="refused_address"} 1');
      expect(text).toContain('lending_api_webhook_delivery_lag_seconds_count 1');
      expect(text).toContain('lending_api_webhook_attempts_in_flight 0');
      // Two retries are pending, neither due yet.
      expect(text).toContain('lending_api_webhook_deliveries_pending 2');
      expect(text).toContain('lending_api_webhook_oldest_due_delivery_seconds 0');

      await store().query(`UPDATE webhook_deliveries SET next_attempt_at = now() - interval '10 minutes' WHERE org_id = $1 AND state = 'pending'`, [tenant.org.id]);
      const fresh = new Registry();
      registerWebhookMetrics(fresh, store(), () => 0);
      const overdue = /^lending_api_webhook_oldest_due_delivery_seconds (\S+)$/m.exec(await fresh.metrics())?.[1];
      expect(Number(overdue)).toBeGreaterThanOrEqual(600);
    } finally {
      await ok.close();
      await failing.close();
    }
  });

  it('measure a resent event\'s lag from its resend, not from when the event entered the log', async () => {
    const ok = await startHttpReceiver((_request, response) => response.writeHead(200).end());
    try {
      const tenant = await createTenant(store(), 'Metrics resend', 'write');
      await insertEndpoint(store(), tenant.org.id, `http://127.0.0.1:${ok.port}/`);
      await insertCreditLimits(store(), tenant.org.id, [creditLimit()]);
      await publishAllEvents(store(), tenant.org.id);
      await newDeliverer(store()).deliverDue();
      // The event entered the log a day ago; it is resent now.
      const [event] = await store().query<{ uid: string }>(
        // In UTC, immutable: Citus refuses a STABLE function of a column (timestamptz - interval) in an UPDATE.
        `UPDATE events SET created_at = ((created_at AT TIME ZONE 'UTC') - interval '1 day') AT TIME ZONE 'UTC' WHERE org_id = $1 RETURNING uid`,
        [tenant.org.id],
      );
      await resendEvent(store(), tenant.org.id, event!.uid, undefined);
      const registry = new Registry();
      const deliverer = newDeliverer(store(), { observer: registerWebhookMetrics(registry, store(), () => 0) });
      await deliverer.deliverDue();
      const text = await registry.metrics();
      expect(text).toContain('lending_api_webhook_delivery_lag_seconds_count 1');
      const sum = Number(/^lending_api_webhook_delivery_lag_seconds_sum (\S+)$/m.exec(text)?.[1]);
      expect(sum).toBeGreaterThanOrEqual(0);
      expect(sum, 'seconds from the resend to the 2xx').toBeLessThan(3600);
    } finally {
      await ok.close();
    }
  });
});
