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

/** The request used up its database budget: the database is too slow or frozen to serve it now. */
export class DatabaseBudgetExceededError extends Error {
  constructor(readonly budgetMs: number) {
    super(`the request's database budget of ${budgetMs} ms ran out`);
    this.name = 'DatabaseBudgetExceededError';
  }
}
