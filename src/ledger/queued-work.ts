/* What the write queue is told: its bounds, and the work it queues (the writer's side of the contract). */

/** A request's answer, or what it throws. */
export type Settled<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: unknown };

export interface WriteQueueOptions {
  /** The most writes of one lane run in one transaction. */
  readonly maxBatch: number;
  /** The most transactions of this process in flight at once (the rest wait here, not in the connection pool). */
  readonly concurrency: number;
  /**
   * The longest a write may wait here before its transaction starts. A
   * write whose estimated wait is longer is refused on arrival
   * (`overloaded`); one that waited longer after all (the database slowed
   * down) is answered without running (`waitedTooLong`).
   */
  readonly maxWaitMs: number;
  /**
   * The most transactions of one group's lone writes (QueuedWork.groupOf) in
   * flight at once; 1 when absent. The group's other lone writes wait for
   * one to end and then go together, in one transaction and one commit,
   * where free slots would have taken them a few at a time.
   */
  readonly joinedPerGroup?: number;
}

/** The database time a write's transaction may use from its start (0 or absent: none); a batch is kept to what fits in it (batchBound). */
export interface WriteQueueBudget {
  readonly budgetMs?: number | undefined;
}

export interface QueuedWork<R, T> {
  /** Requests of one lane (one credit limit) never run concurrently in this process. */
  laneOf(request: R): string;
  /** Requests with the same conflict key (Idempotency-Key) never share a batch; undefined: none. */
  conflictKeyOf(request: R): string | undefined;
  /**
   * Optional: requests of different lanes that may run in one transaction
   * share a group (e.g. their organization); undefined: the request runs
   * only with its own lane's.
   */
  groupOf?(request: R): string | undefined;
  /**
   * Optional: the tenant (organization) of a request. When a slot frees, a
   * lane of a tenant with no transaction in flight goes first, so one
   * tenant's flood of writes makes another's wait for one slot, not for the
   * flood's lanes; absent: lanes take turns in the order they became ready.
   */
  tenantOf?(request: R): string;
  /** Runs the requests in one transaction (or, if it fails, as the writer decides); settles each. Never throws. */
  run(batch: readonly R[]): Promise<Settled<T>[]>;
  /** The refusal of a request that arrives when its wait is estimated at `waitMs`, over the bound. */
  overloaded(waitMs: number): unknown;
  /** The answer of a request that waited here `waitedMs`, past the bound, without running. */
  waitedTooLong(waitedMs: number): unknown;
}

/**
 * Writes waiting for their transaction; transactions in flight; writes refused as overloaded since start;
 * the running average of a transaction's duration; writes that left the queue since start and their total wait.
 */
export interface WriteQueueSnapshot {
  readonly waiting: number;
  readonly inFlight: number;
  readonly overloaded: number;
  readonly transactionMs: number;
  readonly left: number;
  readonly waitedMs: number;
}
