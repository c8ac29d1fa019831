import { afterEach, expect, it } from 'vitest';
import { EventPublisher } from '../../src/events/event-publisher.js';
import { publishAllEvents } from '../../src/events/publish-events.js';
import { createLogger } from '../../src/logger.js';
import type { Store } from '../../src/store/store.js';
import { creditLimit, insertCreditLimits } from '../helpers/records.js';
import { describeEachStore } from '../helpers/stores.js';
import { createTenant } from '../helpers/tenants.js';
import { deliveriesOf, eventually, insertEndpoint, newDeliverer } from './deliverer-helpers.js';
import { startHttpReceiver, type Receiver } from './receivers.js';

const receivers: Receiver[] = [];
afterEach(async () => {
  await Promise.all(receivers.splice(0).map((receiver) => receiver.close()));
});

/** No poll or sweep during a test: only the wake under test can start the work. */
const NEVER_MS = 3_600_000;

/**
 * A wake that arrives after a loop's last look for more work but before its
 * promise has settled (a publication committing just as the deliverer's
 * rounds end) must not be lost: without a poll it would wait forever, with
 * one up to its interval. So must one that arrives while a claim that
 * found nothing is under way. Each test runs its wake at exactly that
 * moment, by wrapping the private loop or the store.
 */
describeEachStore('wakes that arrive as the work loop ends', (store) => {
  it('the deliverer claims for a wake that arrives as its rounds end', async () => {
    const hits = await startHttpReceiver((_request, response) => response.writeHead(204).end());
    receivers.push(hits);
    const tenant = await createTenant(store(), 'Late wake', 'write');
    await insertEndpoint(store(), tenant.org.id, `http://127.0.0.1:${hits.port}/`, ['credit_limit.created']);
    const deliverer = newDeliverer(store(), { pollIntervalMs: NEVER_MS });
    const internals = deliverer as unknown as { rounds(): Promise<void> };
    const rounds = internals.rounds.bind(deliverer);
    let late = true;
    internals.rounds = async () => {
      await rounds();
      if (!late) return;
      late = false;
      await insertCreditLimits(store(), tenant.org.id, Array.from({ length: 3 }, () => creditLimit()));
      await publishAllEvents(store(), tenant.org.id);
      deliverer.wake(tenant.org.id);
    };
    try {
      deliverer.start();
      await eventually(async () => (await deliveriesOf(store(), tenant.org.id)).filter((d) => d.state === 'delivered').length === 3, 30_000, 'the 3 events delivered');
      expect(late).toBe(false);
      expect(hits.requests).toHaveLength(3);
    } finally {
      await deliverer.stop();
    }
  });

  it('the deliverer claims for a wake that arrives while a claim that found nothing is under way', async () => {
    const hits = await startHttpReceiver((_request, response) => response.writeHead(204).end());
    receivers.push(hits);
    const tenant = await createTenant(store(), 'Wake during a claim', 'write');
    await insertEndpoint(store(), tenant.org.id, `http://127.0.0.1:${hits.port}/`, ['credit_limit.created']);
    let armed = false;
    // The claim's transaction has taken its snapshot (and found nothing) when the new events commit and wake the deliverer.
    const claimsThenPublishes = new Proxy(store(), {
      get(target, property) {
        if (property === 'transaction') {
          return async (...args: Parameters<Store['transaction']>) => {
            const result = await target.transaction(...args);
            if (armed) {
              armed = false;
              await insertCreditLimits(store(), tenant.org.id, Array.from({ length: 2 }, () => creditLimit()));
              await publishAllEvents(store(), tenant.org.id);
              deliverer.wake(tenant.org.id);
            }
            return result;
          };
        }
        const value: unknown = Reflect.get(target, property, target);
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    }) as Store;
    const deliverer = newDeliverer(claimsThenPublishes, { pollIntervalMs: NEVER_MS });
    try {
      deliverer.start();
      await deliverer.deliverDue();
      armed = true;
      deliverer.wake(tenant.org.id);
      await eventually(async () => (await deliveriesOf(store(), tenant.org.id)).filter((d) => d.state === 'delivered').length === 2, 30_000, 'the 2 events delivered');
      expect(armed).toBe(false);
      expect(hits.requests).toHaveLength(2);
    } finally {
      await deliverer.stop();
    }
  });

  it('the publisher publishes for an organization named as its drain ends', async () => {
    const tenant = await createTenant(store(), 'Late notify', 'write');
    const published: number[] = [];
    const publisher = new EventPublisher(store(), {
      sweepIntervalMs: NEVER_MS,
      log: createLogger('silent'),
      onPublished: (_orgId, publication) => published.push(publication.published),
    });
    const internals = publisher as unknown as { drain(): Promise<void> };
    const drain = internals.drain.bind(publisher);
    let late = true;
    internals.drain = async () => {
      await drain();
      if (!late) return;
      late = false;
      await insertCreditLimits(store(), tenant.org.id, Array.from({ length: 2 }, () => creditLimit()));
      publisher.notify(tenant.org.id);
    };
    try {
      await insertCreditLimits(store(), tenant.org.id, [creditLimit()]);
      publisher.notify(tenant.org.id);
      await eventually(() => published.reduce((sum, n) => sum + n, 0) === 3, 30_000, 'the 3 events published');
      expect(late).toBe(false);
      const [outbox] = await store().query<{ n: number }>('SELECT count(*)::int AS n FROM event_outbox WHERE org_id = $1', [tenant.org.id]);
      expect(outbox?.n).toBe(0);
    } finally {
      await publisher.stop();
    }
  });
});
