import { performance } from 'node:perf_hooks';
import { Deadlines, type Watch } from './deadlines.js';

export interface FairShareOptions {
  /** Queries that may run at once, every organization's together (the pool's connections). */
  readonly slots: number;
  /** Queries one organization may have waiting for a slot; one more is refused at once (DATABASE_QUEUE_PER_ORG). */
  readonly queuePerTenant: number;
}

/** Ten queries at once (the default pool size), and 1000 waiting per organization (DATABASE_QUEUE_PER_ORG). */
export const DEFAULT_DATABASE_SHARE: FairShareOptions = { slots: 10, queuePerTenant: 1000 };

const OVERLOAD_MESSAGES = {
  'queue-full': "the organization's queue of database work is full",
  waited: "the request's database time ran out waiting for its organization's turn",
  'no-connection': "no connection to the database could be had in time while the database went on answering this node's other queries",
} as const;

/**
 * The database is answering, but an organization's share of it is used up:
 * its queue of queries is full, or its query waited for a slot until its
 * request's database time ran out while the database kept answering others;
 * or the node itself is too busy: a connection (the pool's wait, or a new
 * connection's handshake) timed out while the database answered the node's
 * other queries (PostgresStore). Nothing was sent to the database: the
 * request is refused as `overloaded`, and never reported as the database
 * being unreachable.
 */
export class DatabaseOverloadedError extends Error {
  constructor(
    readonly reason: keyof typeof OVERLOAD_MESSAGES,
    cause?: unknown,
  ) {
    super(OVERLOAD_MESSAGES[reason], { cause });
    this.name = 'DatabaseOverloadedError';
  }
}

interface Waiter {
  readonly tenant: Tenant;
  readonly grant: () => void;
  readonly watch: Watch | undefined;
}

interface Tenant {
  readonly key: string;
  readonly waiting: Waiter[];
}

/**
 * Admission of queries to the database, fair between organizations: at most
 * `slots` run at once; beyond, each organization waits in a queue of its own
 * (at most `queuePerTenant` long: one more is refused), and a freed slot goes
 * to the organizations with a query waiting in turn, one query each, so a
 * flood from one organization makes the others wait for one slot to free,
 * not for the flood's queue. A lone organization may use every slot.
 *
 * It also keeps when the database last answered a query (`answeredSince`):
 * a request whose database time ran out while others were answered met a
 * busy database (overloaded), not an unreachable one.
 */
export class FairShare {
  private running = 0;
  private readonly tenants = new Map<string, Tenant>();
  /** Organizations with a query waiting, in turn order. */
  private readonly turns: Tenant[] = [];
  private readonly deadlines = new Deadlines();
  private lastAnsweredAt = Number.NEGATIVE_INFINITY;
  /** Queries answered since start: a waiter tells by it whether any was answered while it waited, with no clock read. */
  private answers = 0;
  /** Queries refused (queue full, or their time ran out waiting) since start. */
  refused = 0;

  constructor(
    readonly options: FairShareOptions,
    private readonly now: () => number = () => performance.now(),
  ) {
    for (const [name, value] of Object.entries(options)) {
      if (!Number.isInteger(value) || value < 1) throw new RangeError(`fair share: ${name} must be a positive integer, got ${value}`);
    }
  }

  /** Queries running and waiting. */
  get stats(): { readonly running: number; readonly waiting: number } {
    let waiting = 0;
    for (const tenant of this.turns) waiting += tenant.waiting.length;
    return { running: this.running, waiting };
  }

  /**
   * A slot for one query of `tenant`: undefined when it may run at once,
   * else a promise that resolves when it may, or rejects with
   * DatabaseOverloadedError (its queue is full, or `deadlineAt` passed while
   * it waited and the database answered others) or with `unavailable()`
   * (the deadline passed and the database answered nothing meanwhile).
   * Every slot granted is given back with `leave`.
   */
  enter(tenantKey: string, deadlineAt: number | undefined, unavailable: () => unknown): Promise<void> | undefined {
    if (this.tryEnter()) return undefined;
    let tenant = this.tenants.get(tenantKey);
    if (tenant && tenant.waiting.length >= this.options.queuePerTenant) {
      this.refused += 1;
      return Promise.reject(new DatabaseOverloadedError('queue-full'));
    }
    if (!tenant) {
      tenant = { key: tenantKey, waiting: [] };
      this.tenants.set(tenantKey, tenant);
    }
    const queued = tenant;
    const answersBefore = this.answers;
    return new Promise<void>((resolve, reject) => {
      const watch =
        deadlineAt === undefined
          ? undefined
          : this.deadlines.watch(deadlineAt, () => {
              this.remove(waiter);
              if (this.answers === answersBefore) return reject(unavailable());
              this.refused += 1;
              reject(new DatabaseOverloadedError('waited'));
            });
      const waiter: Waiter = { tenant: queued, grant: resolve, watch };
      if (queued.waiting.push(waiter) === 1) this.turns.push(queued);
    });
  }

  /**
   * A slot for a query that may run at once (a slot is free and no
   * organization waits): true, and the slot is taken; else false, and
   * nothing changed (`enter` queues it). What `enter` does first, without
   * its arguments: the caller works out the tenant and deadline only when
   * the query has to wait.
   */
  tryEnter(): boolean {
    if (this.running >= this.options.slots || this.turns.length > 0) return false;
    this.running += 1;
    return true;
  }

  /** Gives a slot back; `answered`: the database answered the query (a result or its own error), not a lost connection. */
  leave(answered: boolean): void {
    if (answered) this.recordAnswer();
    const tenant = this.turns.shift();
    const waiter = tenant?.waiting.shift();
    if (!tenant || !waiter) {
      this.running -= 1;
      return;
    }
    // The slot passes straight to the next organization's query; the organization goes to the back of the turns.
    if (tenant.waiting.length > 0) this.turns.push(tenant);
    else this.tenants.delete(tenant.key);
    if (waiter.watch) this.deadlines.cancel(waiter.watch);
    waiter.grant();
  }

  /** Whether the database answered a query after `since` (performance.now() ms). */
  answeredSince(since: number): boolean {
    return this.lastAnsweredAt > since;
  }

  /** Tells the share that the database answered a query it did not admit (a write's transaction). */
  answered(): void {
    this.recordAnswer();
  }

  private recordAnswer(): void {
    this.answers += 1;
    this.lastAnsweredAt = this.now();
  }

  private remove(waiter: Waiter): void {
    const { tenant } = waiter;
    const at = tenant.waiting.indexOf(waiter);
    if (at >= 0) tenant.waiting.splice(at, 1);
    if (tenant.waiting.length > 0) return;
    this.tenants.delete(tenant.key);
    const turn = this.turns.indexOf(tenant);
    if (turn >= 0) this.turns.splice(turn, 1);
  }
}
