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
    const query = <Row>(sql: string, params?: readonly unknown[], options?: QueryOptions): Promise<Row[]> => {
      // A free slot (almost every query): no deadline, tenant or promise of the share's to make.
      if (share.tryEnter()) return answered(share, budget, started(inner, sql, params, options));
      return queueInShare(share, tenantOf(request), budget, () => started(inner, sql, params, options));
    };
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

/** Waits for the query's turn in its organization's queue (within its budget), then runs it; a refused wait runs nothing and gives back no slot. */
function queueInShare<Row>(share: FairShare, tenant: string, budget: DatabaseBudget | undefined, start: () => Promise<Row[]>): Promise<Row[]> {
  // The wait counts against the request's database time: its clock starts here at the latest.
  const deadlineAt = budget ? performance.now() + budget.remaining() : undefined;
  const turn = share.enter(tenant, deadlineAt, () => new StoreUnavailableError(new DatabaseBudgetExceededError(budget?.ms ?? 0)));
  return turn ? turn.then(() => answered(share, budget, start())) : answered(share, budget, start());
}

/** The query sent; a synchronous throw becomes its rejection, so the slot it holds is still given back. */
function started<Row>(inner: Queryable, sql: string, params: readonly unknown[] | undefined, options: QueryOptions | undefined): Promise<Row[]> {
  try {
    return inner.query<Row>(sql, params, options);
  } catch (error) {
    return Promise.reject(error);
  }
}

/**
 * Gives the slot a query holds back when it is answered or fails.
 * Callbacks on the query's own promise rather than an async function
 * around it: this runs for every query of every request.
 */
function answered<Row>(share: FairShare, budget: DatabaseBudget | undefined, pending: Promise<Row[]>): Promise<Row[]> {
  return pending.then(
    (rows) => {
      share.leave(true);
      return rows;
    },
    (error: unknown) => {
      const thrown = overloadOrAsIs(error, share, budget);
      share.leave(!(error instanceof StoreUnavailableError));
      throw thrown;
    },
  );
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
