/** A request's answer, or what it throws. */
export type Settled<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: unknown };

/** What the coalescer runs: requests one at a time, or several in one transaction. */
export interface CoalescedWork<R, T> {
  /** Requests of one lane (e.g. one credit limit) never run concurrently in this process. */
  laneOf(request: R): string;
  /** Requests with the same conflict key (e.g. Idempotency-Key) never share a batch. */
  conflictKeyOf(request: R): string;
  one(request: R): Promise<T>;
  /** Runs within the first request's database budget; throws (having changed nothing) when any request failed in a way only running it alone answers. */
  many(requests: readonly R[]): Promise<Settled<T>[]>;
  /**
   * Whether what a batch threw is every one of its requests' answer as it
   * is, rather than one request's fault (the database cannot be reached:
   * running each alone would only wait that long again, one after another).
   */
  failsEveryRequest(error: unknown): boolean;
  /** Of such an error: only the budget of the batch's first request ran out (not an outage). */
  isOutOfTime(error: unknown): boolean;
  /** Ms of the request's database budget left (its clock starts now if it had not), undefined without one. */
  timeLeft(request: R): number | undefined;
  /** What a request whose budget ran out while it was queued gets (nothing of it ran). */
  outOfTime(): unknown;
}

interface Waiting<R, T> {
  readonly request: R;
  resolve(value: T): void;
  reject(error: unknown): void;
  /** Set while the request waits in the queue: answers it 503 when its own budget runs out there. */
  timer?: NodeJS.Timeout | undefined;
}

/**
 * Coalesces concurrent writes to one lane. A request that finds its lane idle
 * runs at once, alone, exactly as without the coalescer (no timer, no extra
 * round trip). Requests arriving while their lane's transaction is in flight
 * queue; when it ends, the queue's head (up to `maxBatch` requests, and never
 * two with the same conflict key) runs as one batch, in arrival order, and so
 * on until the queue is empty and the lane is forgotten. A batch that throws
 * is run again request by request, so one failing request never fails or
 * changes the others — unless what it threw answers them all (the database
 * is unreachable), which they then all get at once. Requests are never dropped: one whose client has gone
 * still runs in its turn, as it would have without queueing.
 */
export class WriteCoalescer<R, T> {
  /** A lane is here while a transaction of it is in flight; its array holds the requests waiting behind it. */
  private readonly lanes = new Map<string, Waiting<R, T>[]>();

  constructor(
    private readonly work: CoalescedWork<R, T>,
    private readonly maxBatch: number,
  ) {
    if (!Number.isInteger(maxBatch) || maxBatch < 1) throw new RangeError(`maxBatch must be a positive integer, got ${maxBatch}`);
  }

  /** Lanes with a transaction in flight (none once every write has been answered). */
  get busyLanes(): number {
    return this.lanes.size;
  }

  run(request: R): Promise<T> {
    const lane = this.work.laneOf(request);
    const queue = this.lanes.get(lane);
    if (queue) {
      return new Promise<T>((resolve, reject) => this.enqueue(queue, { request, resolve, reject }));
    }
    const waiting: Waiting<R, T>[] = [];
    this.lanes.set(lane, waiting);
    const running = this.work.one(request);
    const drain = () => this.drain(lane, waiting);
    void running.then(drain, drain);
    return running;
  }

  /**
   * Waiting in the queue is the request's database time (alone it would wait on the limit's row lock):
   * its budget's clock runs from here, and it is answered 503 if the budget runs out before its turn.
   */
  private enqueue(queue: Waiting<R, T>[], waiting: Waiting<R, T>, atFront = false): void {
    const left = this.work.timeLeft(waiting.request);
    if (left !== undefined && left <= 0) return waiting.reject(this.work.outOfTime());
    if (left !== undefined) {
      waiting.timer = setTimeout(() => {
        const at = queue.indexOf(waiting);
        if (at >= 0) queue.splice(at, 1);
        waiting.reject(this.work.outOfTime());
      }, left);
    }
    if (atFront) queue.unshift(waiting);
    else queue.push(waiting);
  }

  private take(queue: Waiting<R, T>[]): Waiting<R, T>[] {
    const batch = queue.splice(0, this.batchLength(queue));
    for (const waiting of batch) clearTimeout(waiting.timer);
    return batch;
  }

  private async drain(lane: string, queue: Waiting<R, T>[]): Promise<void> {
    try {
      while (queue.length > 0) await this.runBatch(queue, this.take(queue));
    } finally {
      this.lanes.delete(lane);
      // Only if runBatch itself broke (it settles every request it takes): fail the rest rather than leave them waiting.
      for (const waiting of queue.splice(0)) waiting.reject(new Error('write coalescer: the lane broke'));
    }
  }

  /** How many of the queue's head form the next batch: in arrival order, up to the first repeated conflict key. */
  private batchLength(queue: readonly Waiting<R, T>[]): number {
    const keys = new Set<string>();
    let length = 0;
    for (const waiting of queue) {
      if (length === this.maxBatch) break;
      const key = this.work.conflictKeyOf(waiting.request);
      if (keys.has(key)) break;
      keys.add(key);
      length += 1;
    }
    return length;
  }

  private async runBatch(queue: Waiting<R, T>[], batch: readonly Waiting<R, T>[]): Promise<void> {
    const [only] = batch;
    if (batch.length === 1 && only) return this.runAlone(only);
    let settled: Settled<T>[];
    try {
      // A batch runs within its first request's database budget (CoalescedWork.many).
      settled = await this.work.many(batch.map((waiting) => waiting.request));
    } catch (error) {
      if (this.work.failsEveryRequest(error)) {
        // Only its first request's budget ran out (a lock wait, a slow commit): that one has its answer; the
        // others run again with their own budgets, first in the queue (a batch that did commit replays).
        const [first, ...rest] = batch;
        if (first && this.work.isOutOfTime(error)) {
          first.reject(error);
          for (const waiting of rest.reverse()) this.enqueue(queue, waiting, true);
          return;
        }
        for (const waiting of batch) waiting.reject(error);
        return;
      }
      for (const waiting of batch) await this.runAlone(waiting);
      return;
    }
    batch.forEach((waiting, i) => {
      const outcome = settled[i];
      if (!outcome) waiting.reject(new Error('write coalescer: the batch answered fewer requests than it ran'));
      else if (outcome.ok) waiting.resolve(outcome.value);
      else waiting.reject(outcome.error);
    });
  }

  private async runAlone(waiting: Waiting<R, T>): Promise<void> {
    try {
      waiting.resolve(await this.work.one(waiting.request));
    } catch (error) {
      waiting.reject(error);
    }
  }
}
