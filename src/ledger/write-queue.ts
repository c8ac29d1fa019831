import { performance } from 'node:perf_hooks';
import type { QueuedWork, WriteQueueBudget, WriteQueueOptions, WriteQueueSnapshot } from './queued-work.js';
import { TenantTurns } from './tenant-turns.js';

export type { QueuedWork, Settled, WriteQueueBudget, WriteQueueOptions, WriteQueueSnapshot } from './queued-work.js';

interface Waiting<R, T> {
  readonly request: R;
  readonly since: number;
  resolve(value: T): void;
  reject(error: unknown): void;
}

interface Lane<R, T> {
  readonly key: string;
  readonly tenant: string | undefined;
  readonly queue: Waiting<R, T>[];
  /** A transaction of the lane is in flight. */
  running: boolean;
}

/** A transaction's duration before any was measured (ms). */
const FIRST_ESTIMATE_MS = 10;
/** Weight of the newest transaction in the running average of their durations. */
const SMOOTHING = 0.2;

/**
 * The process's queue of writes. Per lane, one transaction at a time: the
 * writes that arrive while it runs wait, then run together (up to maxBatch,
 * in arrival order, never two with one conflict key). Across lanes, at most
 * `concurrency` transactions at once; lanes with writes ready take turns,
 * tenant by tenant (TenantTurns), in the order they became ready within a
 * tenant, and lone writes of one group waiting for a
 * slot go together in one (joinLoneWrites). A write that finds its lane idle
 * and a slot free runs at the end of the event loop's turn, with the writes
 * that arrived in the same turn (schedulePump).
 *
 * Capacity, not a clock, decides refusals: on arrival the wait before the
 * write's transaction starts is estimated from the batches ahead of it (in
 * its lane, and lanes waiting for a slot) and the running average of a
 * transaction's duration; over maxWaitMs it is refused at once, before it
 * waits, having run nothing. The database time a write may use (its
 * budget) is the transaction's own and starts when the transaction does.
 */
export class WriteQueue<R, T> {
  private readonly lanes = new Map<string, Lane<R, T>>();
  /** Lanes with writes waiting for a transaction slot, in the order they became ready. */
  private readonly ready: Lane<R, T>[] = [];
  private inFlight = 0;
  /** Transactions in flight that a group's lone write started (joinedPerGroup), by group. */
  private readonly joinedInFlight = new Map<string, number>();
  /** Transactions in flight per tenant, and whose turn it is (QueuedWork.tenantOf). */
  private readonly turns = new TenantTurns();
  private waitingCount = 0;
  private transactionMs = FIRST_ESTIMATE_MS;
  /** A write's share of its transaction's duration: rises at once with a slower transaction, falls slowly. */
  private writeMs = FIRST_ESTIMATE_MS;
  private refusedCount = 0;
  private pumpScheduled = false;
  /** Writes that left the queue (for their transaction, or answered for waiting too long), and their total wait (ms). */
  private leftCount = 0;
  private waitedMs = 0;

  constructor(
    private readonly work: QueuedWork<R, T>,
    private readonly options: WriteQueueOptions & WriteQueueBudget,
    /** The clock (ms): a test's own, to measure transactions and waits without wall-clock time. */
    private readonly now: () => number = () => performance.now(),
    /** Runs `start` once this turn of the event loop is over (schedulePump); a test's own runs it at once. */
    private readonly later: (start: () => void) => void = setImmediate,
  ) {
    for (const [name, value] of Object.entries(options)) {
      if (name === 'budgetMs' || value === undefined) continue;
      if (!Number.isInteger(value) || value < 1) throw new RangeError(`write queue: ${name} must be a positive integer, got ${value}`);
    }
  }

  get stats(): WriteQueueSnapshot {
    return { waiting: this.waitingCount, inFlight: this.inFlight, overloaded: this.refusedCount, transactionMs: this.transactionMs, left: this.leftCount, waitedMs: this.waitedMs };
  }

  private leave(waiting: Waiting<R, T>, now: number): void {
    this.waitingCount -= 1;
    this.leftCount += 1;
    this.waitedMs += now - waiting.since;
  }

  /** Lanes with a write queued or in flight (none once every write has been answered). */
  get busyLanes(): number {
    return this.lanes.size;
  }

  run(request: R): Promise<T> {
    const key = this.work.laneOf(request);
    let lane = this.lanes.get(key);
    const tenant = this.work.tenantOf?.(request);
    const waitMs = this.estimatedWaitMs(lane, tenant);
    if (waitMs > this.options.maxWaitMs) {
      this.refusedCount += 1;
      return Promise.reject(this.work.overloaded(waitMs));
    }
    if (!lane) {
      lane = { key, tenant, queue: [], running: false };
      this.lanes.set(key, lane);
    }
    const target = lane;
    return new Promise<T>((resolve, reject) => {
      target.queue.push({ request, since: this.now(), resolve, reject });
      this.waitingCount += 1;
      if (!target.running && target.queue.length === 1) {
        this.ready.push(target);
        this.schedulePump();
      }
    });
  }

  /**
   * How long a write arriving now would wait before its transaction starts:
   * the lane's batches ahead of it, each waiting for a slot when lanes
   * queue for one, times the average transaction. Zero on an idle lane with
   * a free slot. Lone writes waiting for a slot are counted as the joined
   * transactions they will run in (joinLoneWrites), not one each: counted
   * one each, a burst over many limits was refused though it fit.
   */
  private estimatedWaitMs(lane: Lane<R, T> | undefined, tenant: string | undefined): number {
    const slotFree = this.inFlight < this.options.concurrency && this.ready.length === 0;
    const bound = this.batchBound();
    const batchesAhead = lane ? (lane.running ? 1 : 0) + Math.floor(lane.queue.length / bound) : 0;
    // A tenant with nothing in flight or ready takes the next slot that frees (takeReady).
    if (tenant !== undefined && !this.turns.busy(tenant) && !this.ready.some((ready) => ready.tenant === tenant)) {
      return (batchesAhead + (slotFree ? 0 : 1)) * this.transactionMs;
    }
    const readyTransactions = this.readyTransactions(bound);
    const turn = Math.max(1, (readyTransactions + this.inFlight) / this.options.concurrency);
    const slotWait = slotFree ? 0 : Math.ceil((readyTransactions + 1) / this.options.concurrency);
    return (batchesAhead * turn + slotWait) * this.transactionMs;
  }

  /** The transactions the lanes waiting for a slot will take: one per busy lane, lone writes that can join `bound` to one. */
  private readyTransactions(bound: number): number {
    if (!this.work.groupOf) return this.ready.length;
    let lone = 0;
    for (const lane of this.ready) {
      const [head] = lane.queue;
      if (lane.queue.length === 1 && head && this.work.groupOf(head.request) !== undefined) lone += 1;
    }
    return this.ready.length - lone + Math.ceil(lone / bound);
  }

  /**
   * Starts the lanes that became ready once this turn of the event loop has
   * taken in every request that arrived with this one (the sockets one poll
   * of the event loop found readable): writes that arrive together then go
   * together (joinLoneWrites) — one transaction and one round trip for
   * them — where starting each at once gave each its own. The wait is that
   * of the rest of the turn, not a timer.
   */
  private schedulePump(): void {
    if (this.pumpScheduled) return;
    this.pumpScheduled = true;
    this.later(() => {
      this.pumpScheduled = false;
      this.pump();
    });
  }

  /**
   * Starts ready lanes while slots are free. A lane whose lone write's group
   * has joinedPerGroup transactions in flight keeps its place: the end of
   * one of them starts it, with the group's other lone writes waiting then
   * (joinLoneWrites): twice the writes a transaction under load, and a
   * third less PostgreSQL CPU each (docs/performance.md, wfloor).
   */
  private pump(): void {
    const held: Lane<R, T>[] = [];
    while (this.inFlight < this.options.concurrency) {
      const lane = this.takeReady();
      if (!lane) break;
      const group = this.loneGroupOf(lane);
      if (group !== undefined && (this.joinedInFlight.get(group) ?? 0) >= (this.options.joinedPerGroup ?? 1)) {
        held.push(lane);
        continue;
      }
      this.start(lane);
    }
    this.ready.unshift(...held);
  }

  /** The group of a lane's write when it is alone in its lane (it may join others: joinLoneWrites). */
  private loneGroupOf(lane: Lane<R, T>): string | undefined {
    const [head] = lane.queue;
    return lane.queue.length === 1 && head ? this.work.groupOf?.(head.request) : undefined;
  }

  /** The first ready lane of the tenant whose turn it is (TenantTurns); without tenants, the first ready lane. */
  private takeReady(): Lane<R, T> | undefined {
    if (!this.work.tenantOf || this.ready.length < 2) return this.ready.shift();
    return this.ready.splice(this.turns.next(this.ready, (lane) => lane.tenant ?? ''), 1)[0];
  }

  /**
   * The most writes one transaction takes: maxBatch, or fewer when the
   * writes measured lately would not fit in half the transaction's budget
   * together. A transaction that outlives its budget after its COMMIT was
   * sent makes every write in it `outcome_unknown`; a batch kept to what
   * fits makes one slow commit cost a few answers, not a batch of them.
   */
  private batchBound(): number {
    const budgetMs = this.options.budgetMs ?? 0;
    if (budgetMs <= 0) return this.options.maxBatch;
    return Math.max(1, Math.min(this.options.maxBatch, Math.floor(budgetMs / 2 / this.writeMs)));
  }

  private start(lane: Lane<R, T>): void {
    const group = this.loneGroupOf(lane);
    const batch = this.take(lane);
    if (batch.length === 0) return this.settleLane(lane);
    const lanes = [lane];
    if (batch.length === 1) this.joinLoneWrites(batch, lanes);
    for (const running of lanes) running.running = true;
    this.inFlight += 1;
    if (group !== undefined) this.joinedInFlight.set(group, (this.joinedInFlight.get(group) ?? 0) + 1);
    if (lane.tenant !== undefined) this.turns.started(lane.tenant);
    const started = this.now();
    void this.work.run(batch.map((waiting) => waiting.request)).then(
      (settled) => {
        batch.forEach((waiting, i) => {
          const outcome = settled[i];
          if (!outcome) waiting.reject(new Error('write queue: the batch answered fewer writes than it ran'));
          else if (outcome.ok) waiting.resolve(outcome.value);
          else waiting.reject(outcome.error);
        });
        this.finish(lanes, started, batch.length, group);
      },
      (error: unknown) => {
        for (const waiting of batch) waiting.reject(error);
        this.finish(lanes, started, batch.length, group);
      },
    );
  }

  /**
   * A lone write about to start takes with it, into its transaction, the
   * lone writes of other lanes waiting for a slot in the same group (up to
   * maxBatch, never two with one conflict key): when the slots are all
   * busy, the writes that wait for one go together, one transaction — one
   * round trip — instead of one each. Only lanes with a single write
   * waiting (a busy lane batches its own), which then run as part of it.
   */
  private joinLoneWrites(batch: Waiting<R, T>[], lanes: Lane<R, T>[]): void {
    const [first] = batch;
    const group = first && this.work.groupOf?.(first.request);
    if (group === undefined || this.ready.length === 0) return;
    const now = this.now();
    const keys = new Set([this.work.conflictKeyOf((first as Waiting<R, T>).request)]);
    const bound = this.batchBound();
    for (let i = 0; i < this.ready.length && batch.length < bound; ) {
      const lane = this.ready[i] as Lane<R, T>;
      const [head] = lane.queue;
      if (
        !head ||
        lane.queue.length !== 1 ||
        now - head.since > this.options.maxWaitMs ||
        this.work.groupOf?.(head.request) !== group ||
        keys.has(this.work.conflictKeyOf(head.request))
      ) {
        i += 1;
        continue;
      }
      this.ready.splice(i, 1);
      lane.queue.shift();
      this.leave(head, now);
      keys.add(this.work.conflictKeyOf(head.request));
      batch.push(head);
      lanes.push(lane);
    }
  }

  private finish(lanes: readonly Lane<R, T>[], started: number, writes: number, group: string | undefined): void {
    if (group !== undefined) {
      const left = (this.joinedInFlight.get(group) ?? 1) - 1;
      if (left > 0) this.joinedInFlight.set(group, left);
      else this.joinedInFlight.delete(group);
    }
    const took = this.now() - started;
    this.transactionMs += SMOOTHING * (took - this.transactionMs);
    const perWrite = took / Math.max(1, writes);
    this.writeMs = perWrite > this.writeMs ? perWrite : this.writeMs + SMOOTHING * (perWrite - this.writeMs);
    this.inFlight -= 1;
    const tenant = lanes[0]?.tenant;
    if (tenant !== undefined) this.turns.finished(tenant);
    for (const lane of lanes) {
      lane.running = false;
      this.settleLane(lane);
    }
    this.pump();
  }

  /** A lane whose transaction ended: back in line for a slot if writes wait, else forgotten. */
  private settleLane(lane: Lane<R, T>): void {
    if (lane.queue.length > 0) this.ready.push(lane);
    else this.lanes.delete(lane.key);
  }

  /** The queue's head (up to batchBound, up to the first repeated conflict key); writes that waited too long are answered instead. */
  private take(lane: Lane<R, T>): Waiting<R, T>[] {
    const now = this.now();
    const keys = new Set<string>();
    const batch: Waiting<R, T>[] = [];
    const bound = this.batchBound();
    while (batch.length < bound) {
      const waiting = lane.queue[0];
      if (!waiting) break;
      const waited = now - waiting.since;
      if (waited > this.options.maxWaitMs) {
        lane.queue.shift();
        this.leave(waiting, now);
        this.refusedCount += 1;
        waiting.reject(this.work.waitedTooLong(waited));
        continue;
      }
      const key = this.work.conflictKeyOf(waiting.request);
      if (key !== undefined) {
        if (keys.has(key)) break;
        keys.add(key);
      }
      lane.queue.shift();
      this.leave(waiting, now);
      batch.push(waiting);
    }
    return batch;
  }
}
