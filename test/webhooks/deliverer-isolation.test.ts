import { afterEach, expect, it } from 'vitest';
import { publishAllEvents } from '../../src/events/publish-events.js';
import { creditLimit, insertCreditLimits } from '../helpers/records.js';
import { describeEachStore } from '../helpers/stores.js';
import { createTenant } from '../helpers/tenants.js';
import { attemptsOf, deliveriesOf, eventually, insertEndpoint, newDeliverer } from './deliverer-helpers.js';
import { startBlackHole, startHttpReceiver, type Receiver } from './receivers.js';

const receivers: Receiver[] = [];
afterEach(async () => {
  await Promise.all(receivers.splice(0).map((receiver) => receiver.close()));
});

const EVENTS = 6;
const PER_ENDPOINT = 2;

describeEachStore('a black-holed webhook receiver beside fast ones', (store) => {
  it('delays neither the fast endpoint of its organization nor another organization’s, and never has more than N attempts in flight, then one once it has timed out', async () => {
    const hole = await startBlackHole();
    const fast = await startHttpReceiver((_request, response) => response.writeHead(200).end());
    receivers.push(hole, fast);
    const tenant = await createTenant(store(), 'Black hole', 'write');
    const neighbour = await createTenant(store(), 'Neighbour', 'write');
    const holeEndpoint = await insertEndpoint(store(), tenant.org.id, `http://127.0.0.1:${hole.port}/`);
    const fastEndpoint = await insertEndpoint(store(), tenant.org.id, `http://127.0.0.1:${fast.port}/mine`);
    await insertEndpoint(store(), neighbour.org.id, `http://127.0.0.1:${fast.port}/neighbour`);
    for (const orgId of [tenant.org.id, neighbour.org.id]) {
      await insertCreditLimits(store(), orgId, Array.from({ length: EVENTS }, () => creditLimit()));
      await publishAllEvents(store(), orgId);
    }
    // The hole's attempts end at the deadline; the claim outlasts it.
    const deliverer = newDeliverer(store(), { deadlineMs: 8000, claimMs: 60_000, maxInFlightPerEndpoint: PER_ENDPOINT, pollIntervalMs: 100 });
    let mostHeld = 0;
    let mostHeldAfterTimeouts = 0;
    const watch = setInterval(() => {
      mostHeld = Math.max(mostHeld, hole.openSockets());
      mostHeldAfterTimeouts = Math.max(mostHeldAfterTimeouts, hole.openSockets());
    }, 5);
    try {
      deliverer.start();
      const fastDelivered = async () =>
        [...(await deliveriesOf(store(), tenant.org.id)).filter((d) => d.endpoint_id === fastEndpoint.id), ...(await deliveriesOf(store(), neighbour.org.id))]
          .every((d) => d.state === 'delivered');
      await eventually(fastDelivered, 60_000, 'the fast receivers to have every event, recorded');
      expect(fast.requests).toHaveLength(2 * EVENTS);
      // Everything fast was delivered while the hole still held its first attempts: none of them had ended.
      expect(await attemptsOf(store(), tenant.org.id).then((rows) => rows.filter((a) => a.endpoint_id === holeEndpoint.id))).toEqual([]);
      const states = await deliveriesOf(store(), tenant.org.id);
      expect(states.filter((d) => d.endpoint_id === fastEndpoint.id).map((d) => d.state)).toEqual(Array(EVENTS).fill('delivered'));
      expect((await deliveriesOf(store(), neighbour.org.id)).map((d) => d.state)).toEqual(Array(EVENTS).fill('delivered'));
      const claimed = states.filter((d) => d.endpoint_id === holeEndpoint.id && d.claimed_by !== null);
      expect(claimed).toHaveLength(PER_ENDPOINT);

      // At its deadline the hole's attempts end as timeouts, and the next ones are claimed: still N at a time.
      await eventually(async () => (await attemptsOf(store(), tenant.org.id)).filter((a) => a.endpoint_id === holeEndpoint.id).length >= PER_ENDPOINT, 60_000, 'the timeouts');
      const timedOut = (await attemptsOf(store(), tenant.org.id)).filter((a) => a.endpoint_id === holeEndpoint.id);
      expect(timedOut[0]).toMatchObject({ status_code: null, error: 'timed out after 8000 ms waiting for the response' });
      // Its timeouts halved the hole's window (src/webhooks/endpoint-windows.ts): from now on it holds one socket.
      mostHeldAfterTimeouts = 0;
      await eventually(() => hole.connections >= PER_ENDPOINT + 1, 60_000, 'the next claims on the hole');
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(mostHeld).toBeLessThanOrEqual(PER_ENDPOINT);
      expect(mostHeldAfterTimeouts).toBe(1);
      expect(hole.connections).toBe(PER_ENDPOINT + 1);
    } finally {
      clearInterval(watch);
      await deliverer.stop();
    }
  });
});
