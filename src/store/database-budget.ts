import { AsyncLocalStorage } from 'node:async_hooks';
import { performance } from 'node:perf_hooks';

/**
 * One request's database time: every query it makes, waiting for a pooled
 * connection included, must finish within `ms` of its first one.
 */
export class DatabaseBudget {
  /** Set by the first database call of the request. */
  private deadline: number | undefined;

  constructor(readonly ms: number) {}

  /** Milliseconds left; the clock starts at the first call. */
  remaining(): number {
    const now = performance.now();
    this.deadline ??= now + this.ms;
    return this.deadline - now;
  }
}

// Only the write routes use this (their coalescer carries a request's context
// into the batch it joins). Reads pass their budget explicitly: on Node 20 an
// entered AsyncLocalStorage runs a hook on every promise of the process.
const budgets = new AsyncLocalStorage<DatabaseBudget>();

/**
 * Runs `fn` (a request) with `ms` of database time in total, found by every
 * store call in its async context. Queries outside any budget (CLI, imports)
 * are bounded by the store's own timeouts only.
 */
export function runWithDatabaseBudget<T>(ms: number, fn: () => T): T {
  return budgets.run(new DatabaseBudget(ms), fn);
}

/** Milliseconds of the current async context's budget left (see runWithDatabaseBudget), or undefined outside one. */
export function remainingDatabaseBudget(): number | undefined {
  return budgets.getStore()?.remaining();
}

/** The request used up its database budget: the database is too slow or frozen to serve it now. */
export class DatabaseBudgetExceededError extends Error {
  constructor(readonly budgetMs: number) {
    super(`the request's database budget of ${budgetMs} ms ran out`);
    this.name = 'DatabaseBudgetExceededError';
  }
}
