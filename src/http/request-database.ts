import { performance } from 'node:perf_hooks';
import type { FastifyRequest } from 'fastify';
import { parseBasicAuthorization } from '../auth/authenticate.js';
import { DatabaseBudget, DatabaseBudgetExceededError } from '../store/database-budget.js';
import { DatabaseOverloadedError, type FairShare } from '../store/fair-share.js';
import { StoreUnavailableError, type Queryable, type QueryOptions, type Store } from '../store/store.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The store as this request queries it (within its database budget, in its organization's share); made on first use. */
    database: Queryable | undefined;
    /** That budget: a write's transaction runs within it too. */
    databaseBudget: DatabaseBudget | undefined;
  }
}

/** The store as one request sees it: the queries of the authentication hook, the guards and the handler share one budget. */
export type DatabaseOf = (request: FastifyRequest) => Queryable;

/**
 * Each request's view of `store`: bounded by `budgetMs` of database time in
 * total (DATABASE_REQUEST_BUDGET_MS; none when 0 or on PGlite), carried on
 * the request rather than in an AsyncLocalStorage, whose hook would run for
 * every promise of the process; and each query admitted by `share` in its
 * organization's turn (FairShare), so one organization's flood waits in its
 * own queue, not in front of the others' queries.
 */
export function requestDatabase(store: Store, budgetMs: number, share: FairShare): DatabaseOf {
  const budgeted = budgetMs > 0 && store.withBudget ? store.withBudget.bind(store) : undefined;
  return (request) => {
    if (request.database) return request.database;
    const budget = budgeted ? new DatabaseBudget(budgetMs) : undefined;
    request.databaseBudget = budget;
    const inner = budget && budgeted ? budgeted(budget) : store;
    const query = <Row>(sql: string, params?: readonly unknown[], options?: QueryOptions): Promise<Row[]> =>
      queryInShare<Row>(share, tenantOf(request), budget, () => inner.query<Row>(sql, params, options));
    return (request.database = {
      query,
      exec: async (sql: string) => {
        await query(sql);
      },
    });
  };
}

/** The organization a request's queries count for: the authenticated one, else the one its credentials name (for the key lookup), else none. */
function tenantOf(request: FastifyRequest): string {
  return request.auth?.orgUid ?? parseBasicAuthorization(request.headers.authorization)?.organizationId ?? '';
}

async function queryInShare<Row>(share: FairShare, tenant: string, budget: DatabaseBudget | undefined, run: () => Promise<Row[]>): Promise<Row[]> {
  const deadlineAt = budget ? performance.now() + budget.remaining() : undefined;
  const turn = share.enter(tenant, deadlineAt, () => new StoreUnavailableError(new DatabaseBudgetExceededError(budget?.ms ?? 0)));
  if (turn) await turn;
  let answered = true;
  try {
    return await run();
  } catch (error) {
    answered = !(error instanceof StoreUnavailableError);
    throw overloadOrAsIs(error, share, budget);
  } finally {
    share.leave(answered);
  }
}

/**
 * A budget that ran out while the database went on answering other queries
 * (since the budget started: it ran out just now) met a busy database: overloaded, not
 * unreachable. One that ran out while nothing was answered (a frozen or
 * unreachable server) stays a StoreUnavailableError.
 */
export function overloadOrAsIs(error: unknown, share: FairShare, budget: DatabaseBudget | undefined): unknown {
  if (!budget || !(error instanceof StoreUnavailableError) || !(error.cause instanceof DatabaseBudgetExceededError)) return error;
  return share.answeredSince(performance.now() - budget.ms) ? new DatabaseOverloadedError('waited') : error;
}
