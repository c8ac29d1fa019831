import { afterEach, expect, it } from 'vitest';
import { publishAllEvents } from '../../src/events/publish-events.js';
import type { Deliverer } from '../../src/webhooks/deliverer.js';
import { creditLimit, insertCreditLimits } from '../helpers/records.js';
import { describeEachStore } from '../helpers/stores.js';
import { createTenant } from '../helpers/tenants.js';
import { eventually, insertEndpoint, newDeliverer } from './deliverer-helpers.js';
import { startHttpReceiver, type Receiver } from './receivers.js';

const receivers: Receiver[] = [];
afterEach(async () => {
  await Promise.all(receivers.splice(0).map((receiver) => receiver.close()));
});

/** No poll during a test: the backlog is found once at start, the fresh events by their publications' wakes. */
const NEVER_MS = 3_600_000;
const BACKLOG_EVENTS = 300;
const BACKLOG_ENDPOINTS = 2;
const BACKLOG = BACKLOG_EVENTS * BACKLOG_ENDPOINTS;
const CLAIMS_PER_TURN = 2;
/**
 * On PostgreSQL (claims and recordings on connections of their own), with
 * turns much smaller than the organization's share of a node's attempts, and
 * windows that never bind: each of A's claims gets all it asks while attempts
 * end between claims, as with a large backlog to many fast endpoints.
 */
const SHARE = 64;
const SETTINGS = {
  claimsPerTurn: CLAIMS_PER_TURN,
  maxInFlightPerOrganization: SHARE,
  initialInFlightPerEndpoint: 64,
  maxInFlightPerEndpoint: 64,
  pollIntervalMs: NEVER_MS,
};

describeEachStore('organizations taking turns at webhook delivery', (store) => {
  /**
   * How many of A's deliveries reached the receiver between the publication
   * of B's fresh event (on the first node) and its delivery, while `nodes`
   * drain A's backlog of BACKLOG deliveries to fast endpoints. B's connection
   * to the receiver is open before (an event of B's delivered first), as
   * A's are, so the receiver sees the organizations' attempts in the order
   * they were made. The bound is in turns, not time: what A had in flight
   * when B was named, and a turn or two.
   */
  async function overtakenByBacklog(nodes: readonly Deliverer[]): Promise<{ overtaken: number; backlogLeft: number }> {
    const arrivals: string[] = [];
    const aArrived = () => arrivals.filter((url) => url !== '/b').length;
    const bArrivals: number[] = [];
    // B's connection stays open however long the backlog takes to publish on a busy machine.
    const receiver = await startHttpReceiver((request, response) => {
      arrivals.push(request.url);
      if (request.url === '/b') bArrivals.push(aArrived());
      response.writeHead(204).end();
    }, 600_000);
    receivers.push(receiver);
    const a = await createTenant(store(), 'Backlog', 'write');
    const b = await createTenant(store(), 'Fresh', 'write');
    for (let i = 0; i < BACKLOG_ENDPOINTS; i += 1) await insertEndpoint(store(), a.org.id, `http://127.0.0.1:${receiver.port}/a${i}`);
    await insertEndpoint(store(), b.org.id, `http://127.0.0.1:${receiver.port}/b`);
    const publishB = async () => {
      await insertCreditLimits(store(), b.org.id, [creditLimit()]);
      await publishAllEvents(store(), b.org.id);
    };
    try {
      for (const node of nodes) node.start();
      await publishB();
      nodes[0]!.wake(b.org.id);
      await eventually(() => bArrivals.length === 1, 60_000, 'B’s first event delivered');

      await insertCreditLimits(store(), a.org.id, Array.from({ length: BACKLOG_EVENTS }, () => creditLimit()));
      await publishAllEvents(store(), a.org.id);
      for (const node of nodes) node.wake(a.org.id);
      await eventually(() => aArrived() >= 40, 60_000, 'the backlog to be draining');
      await publishB();
      const before = aArrived();
      nodes[0]!.wake(b.org.id);
      await eventually(() => bArrivals.length === 2, 60_000, 'B’s fresh event delivered');
      const overtaken = bArrivals[1]! - before;
      // What is left of the backlog is abandoned by stop(): the measurement is done.
      return { overtaken, backlogLeft: BACKLOG - bArrivals[1]! };
    } finally {
      await Promise.all(nodes.map((node) => node.stop()));
    }
  }

  it('delivers an organization’s fresh event within a turn of another’s backlog, on one node', async () => {
    const { overtaken, backlogLeft } = await overtakenByBacklog([newDeliverer(store(), SETTINGS)]);
    // A's attempts in flight when B was named (at most its share), the turn under way and the one before B's; and one for slack.
    expect(overtaken).toBeLessThanOrEqual(SHARE + 3 * CLAIMS_PER_TURN);
    expect(backlogLeft).toBeGreaterThan(BACKLOG / 2);
  });

  it('delivers it within a turn of each node’s on two nodes draining the backlog together', async () => {
    const { overtaken, backlogLeft } = await overtakenByBacklog([newDeliverer(store(), SETTINGS), newDeliverer(store(), SETTINGS)]);
    // The second node goes on with A's backlog meanwhile: its share and turns as well.
    expect(overtaken).toBeLessThanOrEqual(2 * (SHARE + 3 * CLAIMS_PER_TURN));
    expect(backlogLeft).toBeGreaterThan(BACKLOG / 3);
  });
});
