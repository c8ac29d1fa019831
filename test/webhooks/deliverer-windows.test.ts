import { afterEach, expect, it } from 'vitest';
import { publishAllEvents } from '../../src/events/publish-events.js';
import type { Store } from '../../src/store/store.js';
import { ORGANIZATIONS_WITH_DUE_WORK } from '../../src/webhooks/delivery-claims.js';
import { creditLimit, insertCreditLimits } from '../helpers/records.js';
import { describeEachStore } from '../helpers/stores.js';
import { createTenant } from '../helpers/tenants.js';
import { deliveriesOf, eventually, insertEndpoint, newDeliverer } from './deliverer-helpers.js';
import { startBlackHole, startHttpReceiver, type Receiver } from './receivers.js';

const receivers: Receiver[] = [];
afterEach(async () => {
  await Promise.all(receivers.splice(0).map((receiver) => receiver.close()));
});

describeEachStore('how many attempts an endpoint has in flight', (store) => {
  it('grows for a receiver that answers fast, up to the most, and never beyond', async () => {
    let open = 0;
    let mostOpen = 0;
    // Each answer waits a little, so that attempts overlap when the window lets them.
    const fast = await startHttpReceiver((_request, response) => {
      open += 1;
      mostOpen = Math.max(mostOpen, open);
      setTimeout(() => {
        open -= 1;
        response.writeHead(204).end();
      }, 20);
    });
    receivers.push(fast);
    const tenant = await createTenant(store(), 'Windows', 'write');
    await insertEndpoint(store(), tenant.org.id, `http://127.0.0.1:${fast.port}/`);
    await insertCreditLimits(store(), tenant.org.id, Array.from({ length: 40 }, () => creditLimit()));
    await publishAllEvents(store(), tenant.org.id);
    const deliverer = newDeliverer(store(), { initialInFlightPerEndpoint: 1, maxInFlightPerEndpoint: 4, fastAnswerMs: 60_000, pollIntervalMs: 20 });
    try {
      deliverer.start();
      await eventually(async () => (await deliveriesOf(store(), tenant.org.id)).every((d) => d.state === 'delivered'), 60_000, 'every event delivered');
    } finally {
      await deliverer.stop();
    }
    expect(fast.requests).toHaveLength(40);
    expect(mostOpen).toBeGreaterThan(1);
    expect(mostOpen).toBeLessThanOrEqual(4);
  });

  it('keeps one organization’s black holes to its share of the node while another organization is served', async () => {
    const hole = await startBlackHole();
    const fast = await startHttpReceiver((_request, response) => response.writeHead(204).end());
    receivers.push(hole, fast);
    const flooding = await createTenant(store(), 'Three holes', 'write');
    const neighbour = await createTenant(store(), 'Neighbour', 'write');
    for (let i = 0; i < 3; i += 1) await insertEndpoint(store(), flooding.org.id, `http://127.0.0.1:${hole.port}/${i}`);
    await insertEndpoint(store(), neighbour.org.id, `http://127.0.0.1:${fast.port}/`);
    for (const orgId of [flooding.org.id, neighbour.org.id]) {
      await insertCreditLimits(store(), orgId, Array.from({ length: 5 }, () => creditLimit()));
      await publishAllEvents(store(), orgId);
    }
    // Three endpoints of two each could hold six; the organization's share is three.
    const deliverer = newDeliverer(store(), { deadlineMs: 20_000, claimMs: 60_000, maxInFlightPerEndpoint: 2, maxInFlightPerOrganization: 3, pollIntervalMs: 20 });
    let mostHeld = 0;
    const watch = setInterval(() => (mostHeld = Math.max(mostHeld, hole.openSockets())), 5);
    try {
      deliverer.start();
      await eventually(async () => (await deliveriesOf(store(), neighbour.org.id)).every((d) => d.state === 'delivered'), 60_000, 'the neighbour’s events delivered');
      await eventually(() => hole.openSockets() === 3, 60_000, 'the holes to hold the organization’s share');
      expect(deliverer.inFlight).toBe(3);
    } finally {
      clearInterval(watch);
      await deliverer.stop();
    }
    expect(mostHeld).toBe(3);
    expect(fast.requests).toHaveLength(5);
  });

  it('finds every organization with due work in turn, however many a look can take: one with work it cannot send does not hide the others', async () => {
    const hole = await startBlackHole();
    const fast = await startHttpReceiver((_request, response) => response.writeHead(204).end());
    receivers.push(hole, fast);
    // Created first: the lowest id, with due deliveries a window of one leaves unclaimed, look after look.
    const stuck = await createTenant(store(), 'Stuck first', 'write');
    const others = [await createTenant(store(), 'Second', 'write'), await createTenant(store(), 'Third', 'write')];
    await insertEndpoint(store(), stuck.org.id, `http://127.0.0.1:${hole.port}/`);
    for (const other of others) await insertEndpoint(store(), other.org.id, `http://127.0.0.1:${fast.port}/${other.org.uid}`);
    for (const orgId of [stuck.org.id, ...others.map((other) => other.org.id)]) {
      await insertCreditLimits(store(), orgId, Array.from({ length: 3 }, () => creditLimit()));
      await publishAllEvents(store(), orgId);
    }
    // One organization a look, found only by looking (nothing published on this node).
    const deliverer = newDeliverer(store(), { deadlineMs: 20_000, claimMs: 60_000, maxInFlightPerEndpoint: 1, initialInFlightPerEndpoint: 1, organizationsPerLook: 1, pollIntervalMs: 20 });
    try {
      deliverer.start();
      for (const other of others) {
        await eventually(async () => (await deliveriesOf(store(), other.org.id)).every((d) => d.state === 'delivered'), 60_000, `${other.org.uid}'s events delivered`);
      }
    } finally {
      await deliverer.stop();
    }
    expect(fast.requests).toHaveLength(6);
  });

  it('asks the database which organizations have work only when polled, not after every attempt', async () => {
    const fast = await startHttpReceiver((_request, response) => response.writeHead(204).end());
    receivers.push(fast);
    const tenant = await createTenant(store(), 'Known work', 'write');
    await insertEndpoint(store(), tenant.org.id, `http://127.0.0.1:${fast.port}/known-work`);
    await insertCreditLimits(store(), tenant.org.id, Array.from({ length: 30 }, () => creditLimit()));
    await publishAllEvents(store(), tenant.org.id);
    let discoveries = 0;
    const counting = new Proxy(store(), {
      get(target, property) {
        if (property === 'query') {
          return (sql: string, params?: readonly unknown[]) => {
            if (sql === ORGANIZATIONS_WITH_DUE_WORK) discoveries += 1;
            return target.query(sql, params);
          };
        }
        const value: unknown = Reflect.get(target, property, target);
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    }) as Store;
    // Two at a time: fifteen rounds of claims, each after attempts ended; no poll during the test.
    const deliverer = newDeliverer(counting, { maxInFlightPerEndpoint: 2, pollIntervalMs: 3_600_000 });
    const delivered = (count: number) => async () =>
      (await deliveriesOf(store(), tenant.org.id)).filter((d) => d.state === 'delivered').length === count;
    try {
      deliverer.start();
      await eventually(delivered(30), 60_000, 'the first 30 events delivered');
      expect(discoveries).toBe(1);

      // A publication on this node names its organization: claimed at once, still without asking.
      await insertCreditLimits(store(), tenant.org.id, Array.from({ length: 5 }, () => creditLimit()));
      await publishAllEvents(store(), tenant.org.id);
      deliverer.wake(tenant.org.id);
      await eventually(delivered(35), 60_000, 'the next 5 delivered');
      expect(discoveries).toBe(1);
    } finally {
      await deliverer.stop();
    }
    // Only this endpoint's: the deliverer also serves the earlier tests' organizations (one store per file), whose
    // endpoints pointed at receivers now closed, and one of whose ports this receiver may have been given again.
    expect(fast.requests.filter((request) => request.url === '/known-work')).toHaveLength(35);
  });
});
