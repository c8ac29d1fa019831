import { AsyncLocalStorage } from 'node:async_hooks';
import { performance } from 'node:perf_hooks';

interface Budget {
  readonly ms: number;
  /** Set by the first database call of the request. */
  deadline: number | undefined;
}

const budgets = new AsyncLocalStorage<Budget>();

/**
 * Runs `fn` (a request) with `ms` of database time in total: every query it
 * makes, waiting for a pooled connection included, must finish within `ms`
 * of its first one. Queries outside any budget (CLI, imports) are bounded by
 * the store's own timeouts only.
 */
export function runWithDatabaseBudget<T>(ms: number, fn: () => T): T {
  return budgets.run({ ms, deadline: undefined }, fn);
}

/** Milliseconds of the current request's budget left (the clock starts at its first call), or undefined outside one. */
export function remainingDatabaseBudget(): number | undefined {
  const budget = budgets.getStore();
  if (!budget) return undefined;
  const now = performance.now();
  budget.deadline ??= now + budget.ms;
  return budget.deadline - now;
}

/** The request used up its database budget: the database is too slow or frozen to serve it now. */
export class DatabaseBudgetExceededError extends Error {
  constructor(readonly budgetMs: number) {
    super(`the request's database budget of ${budgetMs} ms ran out`);
    this.name = 'DatabaseBudgetExceededError';
  }
}
