import { performance } from 'node:perf_hooks';

/** A deadline being watched; `cancel` it once what it bounds has finished. */
export interface Watch {
  readonly at: number;
}

interface Node extends Watch {
  readonly onExpiry: () => void;
  prev: Node | undefined;
  next: Node | undefined;
  done: boolean;
}

/**
 * Runs each watch's `onExpiry` once its deadline (in `performance.now()`
 * milliseconds) has passed, unless it was cancelled first, with one timer for
 * all of them. Every query of a request with a database budget is watched,
 * and almost all finish long before their deadline: a timer each
 * (setTimeout, then clearTimeout) cost more CPU than the query's own
 * bookkeeping. The watches are a list in deadline order; as every request has
 * the same budget, a new one almost always goes at the tail. The timer is set
 * for the earliest deadline and left alone when that watch is cancelled: it
 * wakes up once, finds nothing due, and is set for the new earliest. With no
 * watch left it is cleared, so it never keeps an idle process alive.
 */
export class Deadlines {
  private head: Node | undefined;
  private tail: Node | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** When the timer fires; Infinity when there is none. */
  private timerAt = Number.POSITIVE_INFINITY;

  watch(at: number, onExpiry: () => void): Watch {
    const node: Node = { at, onExpiry, prev: undefined, next: undefined, done: false };
    let before = this.tail;
    while (before && before.at > at) before = before.prev;
    node.prev = before;
    node.next = before ? before.next : this.head;
    if (before) before.next = node;
    else this.head = node;
    if (node.next) node.next.prev = node;
    else this.tail = node;
    if (at < this.timerAt) this.arm(at);
    return node;
  }

  cancel(watch: Watch): void {
    const node = watch as Node;
    if (node.done) return;
    this.unlink(node);
    if (!this.head) this.disarm();
  }

  private unlink(node: Node): void {
    node.done = true;
    if (node.prev) node.prev.next = node.next;
    else this.head = node.next;
    if (node.next) node.next.prev = node.prev;
    else this.tail = node.prev;
    node.prev = undefined;
    node.next = undefined;
  }

  private arm(at: number): void {
    clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = setTimeout(this.fire, Math.max(1, at - performance.now()));
  }

  private disarm(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Number.POSITIVE_INFINITY;
  }

  private readonly fire = (): void => {
    this.timer = undefined;
    this.timerAt = Number.POSITIVE_INFINITY;
    const now = performance.now();
    for (let node = this.head; node && node.at <= now; node = this.head) {
      this.unlink(node);
      node.onExpiry();
    }
    if (this.head) this.arm(this.head.at);
  };
}
