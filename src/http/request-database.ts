import type { FastifyRequest } from 'fastify';
import { DatabaseBudget } from '../store/database-budget.js';
import type { Queryable, Store } from '../store/store.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The store as this request queries it (within its database budget); made on first use. */
    database: Queryable | undefined;
    /** That budget: a write's transaction runs within it too. */
    databaseBudget: DatabaseBudget | undefined;
  }
}

/** The store as one request sees it: the queries of the authentication hook, the guards and the handler share one budget. */
export type DatabaseOf = (request: FastifyRequest) => Queryable;

/**
 * Each request's view of `store`: bounded by `budgetMs` of database time in
 * total (DATABASE_REQUEST_BUDGET_MS), carried on the request rather than in
 * an AsyncLocalStorage, whose hook would run for every promise of the
 * process. The store itself when there is no budget.
 */
export function requestDatabase(store: Store, budgetMs: number): DatabaseOf {
  if (budgetMs <= 0 || !store.withBudget) return () => store;
  const withBudget = store.withBudget.bind(store);
  return (request) => {
    if (request.database) return request.database;
    const budget = new DatabaseBudget(budgetMs);
    request.databaseBudget = budget;
    return (request.database = withBudget(budget));
  };
}
