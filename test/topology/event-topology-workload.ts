import { randomUUID } from 'node:crypto';
import type { Queryable, Store } from '../../src/store/store.js';
import { importLines } from '../helpers/import-lines.js';
import { creditLimit, insertCreditLimits, insertPaymentMethods, paymentMethod } from '../helpers/records.js';
import type { SseReader } from '../helpers/sse.js';
import { createTenant, type Tenant } from '../helpers/tenants.js';
import { eventually, sleep } from './load.js';

/**
 * What the event topology tests share: a lender with room to write, a mix of
 * the writes that record events (drawdowns and loans over HTTP, an import
 * beside them), a stream reader that notes when each event arrived, the log
 * as the database holds it, and lag figures (arrival − the event's
 * `created_at`, its publication stamp: the same machine's clock).
 */
export interface Lender {
  readonly tenant: Tenant;
  readonly limitUid: string;
  readonly methodUid: string;
}

export async function seedLender(store: Store, name: string): Promise<Lender> {
  const tenant = await createTenant(store, name, 'write');
  const suffix = randomUUID().slice(0, 8);
  const limitUid = `cl_topo_${suffix}`;
  const methodUid = `pm_topo_${suffix}`;
  await insertCreditLimits(store, tenant.org.id, [creditLimit({ uid: limitUid, entity: 'ent_topo', currency: 'USD', capacity: '100000000.00', outstanding: '0.00' })]);
  await insertPaymentMethods(store, tenant.org.id, [paymentMethod({ uid: methodUid, entity: 'ent_topo', currency: 'USD' })]);
  return { tenant, limitUid, methodUid };
}

export interface WriteMix {
  readonly drawdowns: number;
  readonly loans: number;
  /** Drawdowns imported (`lending-api import`'s code, from the test process) while the HTTP writes run. */
  readonly imported: number;
  /** HTTP writes in flight at once. */
  readonly concurrency: number;
}

/** POSTs the mix's drawdowns and loans to `baseUrls` (in turn), imports beside them; every write must be a 201. */
export async function writeMix(store: Store, baseUrls: readonly string[], lender: Lender, mix: WriteMix): Promise<void> {
  const writes: { path: string; body: unknown }[] = [
    ...Array.from({ length: mix.drawdowns }, () => ({ path: `/api/limits/${lender.limitUid}/drawdowns/`, body: { amount: '1.00' } })),
    ...Array.from({ length: mix.loans }, () => ({ path: '/api/loans/', body: { credit_limit: lender.limitUid, payment_method: lender.methodUid, principal: '2.00' } })),
  ].sort(() => Math.random() - 0.5);
  let next = 0;
  const worker = async () => {
    while (next < writes.length) {
      const i = next++;
      const write = writes[i]!;
      const response = await fetch(baseUrls[i % baseUrls.length]! + write.path, {
        method: 'POST',
        headers: { authorization: lender.tenant.authorization, 'content-type': 'application/json', 'idempotency-key': randomUUID() },
        body: JSON.stringify(write.body),
      });
      if (response.status !== 201) throw new Error(`POST ${write.path} answered ${response.status}: ${await response.text()}`);
    }
  };
  const importer = async () => {
    // Imported in a few slices while the HTTP writes go on: each slice's events are published by a node's sweep.
    const slices = 4;
    for (let s = 0; s < slices; s += 1) {
      await sleep(200);
      const lines = Array.from({ length: Math.ceil(mix.imported / slices) }, () => ({ object: 'drawdown', id: `dd_${randomUUID()}`, limit: lender.limitUid, amount: '1.00' }));
      await importLines(store, lender.tenant.org.uid, lines);
    }
  };
  await Promise.all([...Array.from({ length: mix.concurrency }, worker), importer()]);
}

/**
 * One drawdown at a time, `gapMs` apart, to `baseUrls` in turn: fresh events on a quiet system, whose lag is the
 * wakeup's (a burst's lag is its queue's).
 */
export async function pacedDrawdowns(baseUrls: readonly string[], lender: Lender, count: number, gapMs: number): Promise<void> {
  for (let i = 0; i < count; i += 1) {
    const response = await fetch(`${baseUrls[i % baseUrls.length]!}/api/limits/${lender.limitUid}/drawdowns/`, {
      method: 'POST',
      headers: { authorization: lender.tenant.authorization, 'content-type': 'application/json', 'idempotency-key': randomUUID() },
      body: JSON.stringify({ amount: '1.00' }),
    });
    if (response.status !== 201) throw new Error(`a paced drawdown answered ${response.status}: ${await response.text()}`);
    await sleep(gapMs);
  }
}

/** Waits until every event written is in the log (the outbox of the organization empty). */
export async function allPublished(db: Queryable, orgId: string): Promise<void> {
  await eventually(async () => {
    const [row] = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM event_outbox WHERE org_id = $1', [orgId]);
    return row?.n === 0;
  }, 120_000, 'the outbox published');
}

/** The organization's event ids in the log's order (created_at, id). */
export async function logOrder(db: Queryable, orgId: string): Promise<string[]> {
  const rows = await db.query<{ uid: string }>('SELECT uid FROM events WHERE org_id = $1 ORDER BY created_at, id', [orgId]);
  return rows.map((row) => row.uid);
}

export interface Arrival {
  readonly id: string;
  readonly createdAt: string;
  /** Date.now() when the event was read off the stream. */
  readonly at: number;
}

/** Reads a stream on into `arrivals` until stopped; the next event after stop() ends it. */
export function follow(reader: SseReader): { arrivals: Arrival[]; stop: () => Promise<void>; until: (count: number) => Promise<void> } {
  const arrivals: Arrival[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      const event = await reader.next();
      if (!event) return;
      const body = JSON.parse(event.data) as { id: string; created_at: string };
      arrivals.push({ id: body.id, createdAt: body.created_at, at: Date.now() });
    }
  })();
  return {
    arrivals,
    until: (count) => eventually(async () => arrivals.length >= count || reader.ended, 120_000, `${count} events on the stream`),
    stop: async () => {
      running = false;
      reader.close();
      await loop.catch(() => {});
    },
  };
}

export interface LagFigures {
  readonly n: number;
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
}

/** Milliseconds from each event's publication stamp to its arrival. */
export function lagOf(arrivals: readonly { createdAt: string; at: number }[]): LagFigures {
  const lags = arrivals.map((arrival) => arrival.at - Date.parse(arrival.createdAt)).sort((a, b) => a - b);
  const at = (q: number) => lags[Math.min(lags.length - 1, Math.floor(q * lags.length))] ?? NaN;
  return { n: lags.length, p50: at(0.5), p99: at(0.99), max: lags[lags.length - 1] ?? NaN };
}

export const formatLag = (lag: LagFigures) => `n ${lag.n}, p50 ${lag.p50} ms, p99 ${lag.p99} ms, max ${lag.max} ms`;
