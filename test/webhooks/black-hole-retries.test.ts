import { afterEach, expect, it } from 'vitest';
import { publishAllEvents } from '../../src/events/publish-events.js';
import { RETRY_DELAYS_MS, RETRY_JITTER } from '../../src/webhooks/retry-schedule.js';
import { creditLimit, insertCreditLimits } from '../helpers/records.js';
import { describeEachStore } from '../helpers/stores.js';
import { createTenant } from '../helpers/tenants.js';
import { attemptsOf, deliveriesOf, insertEndpoint, newDeliverer } from './deliverer-helpers.js';
import { startBlackHole, type Receiver } from './receivers.js';

const receivers: Receiver[] = [];
afterEach(async () => {
  await Promise.all(receivers.splice(0).map((receiver) => receiver.close()));
});

const EVENTS = 6;
const DEADLINE_MS = 1000;

describeEachStore('retries behind a black-holed endpoint', (store) => {
  it('fail the deliveries waiting behind a timed-out attempt with it, unsent, each retried on its own schedule instead of a deadline behind the one before', async () => {
    const hole = await startBlackHole();
    receivers.push(hole);
    const tenant = await createTenant(store(), 'Black hole', 'write');
    const endpoint = await insertEndpoint(store(), tenant.org.id, `http://127.0.0.1:${hole.port}/`);
    await insertCreditLimits(store(), tenant.org.id, Array.from({ length: EVENTS }, () => creditLimit()));
    await publishAllEvents(store(), tenant.org.id);
    // One attempt in flight at a time, as a black hole's window soon is; no poll: the round and the attempt's end drive it.
    const deliverer = newDeliverer(store(), { deadlineMs: DEADLINE_MS, maxInFlightPerEndpoint: 1, initialInFlightPerEndpoint: 1, pollIntervalMs: 3_600_000, random: () => 0.5 });
    try {
      await deliverer.deliverDue();
    } finally {
      await deliverer.stop();
    }
    // One socket, one deadline: every delivery had its first attempt by then, none waited for a socket of its own.
    expect(hole.connections).toBe(1);
    const deliveries = await deliveriesOf(store(), tenant.org.id);
    expect(deliveries.map((d) => [d.state, d.attempts])).toEqual(Array(EVENTS).fill(['pending', 1]));
    const attempts = await attemptsOf(store(), tenant.org.id);
    expect(attempts).toHaveLength(EVENTS);
    expect(attempts.every((a) => a.endpoint_id === endpoint.id && a.attempt === 1 && a.status_code === null)).toBe(true);
    const [sent, ...unsent] = attempts;
    expect(sent!.error).toBe(`timed out after ${DEADLINE_MS} ms waiting for the response`);
    for (const attempt of unsent) expect(attempt.error).toBe(`not sent: an attempt of ${sent!.event_uid} to this endpoint timed out after ${DEADLINE_MS} ms just before; this one failed with it`);
    // Each next attempt on the schedule (attempt 2: 5 s, random() = 0.5 is no jitter), counted from when it was decided.
    const [second] = RETRY_DELAYS_MS;
    for (const attempt of attempts) {
      expect(attempt.next_in_seconds).toBeGreaterThanOrEqual((second! * (1 - RETRY_JITTER)) / 1000);
      expect(attempt.next_in_seconds).toBeLessThanOrEqual((second! * (1 + RETRY_JITTER)) / 1000);
    }
  });
});
