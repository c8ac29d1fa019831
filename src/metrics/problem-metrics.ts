import type { FastifyInstance } from 'fastify';
import { Counter, type Registry } from 'prom-client';
import { ERROR_CODES, PROBLEM_CONTENT_TYPE, type ErrorCode } from '../domain/errors.js';
import { DatabaseBudgetExceededError } from '../store/database-budget.js';

/**
 * Problem answers by their `code`, counted where every answer is sent (the
 * onSend hook sees each problem+json body, whichever hook, handler, guard or
 * stored idempotent answer produced it), so an alert on `overloaded` or
 * `outcome_unknown` holds wherever in the service that answer is decided.
 * And requests whose database budget ran out, found in the cause chain of
 * what was thrown, before the error handler turns it into a 503 or 504.
 */
export function registerProblemMetrics(app: FastifyInstance, registry: Registry): void {
  const byCode = new Map<string, number>(Object.keys(ERROR_CODES).map((code) => [code, 0]));
  let budgetsExhausted = 0;
  new Counter({
    name: 'lending_api_problem_responses_total',
    help: 'Problem (application/problem+json) answers sent, by their code; every code is exported, 0 until first answered',
    labelNames: ['code'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const [code, count] of byCode) this.inc({ code }, count);
    },
  });
  new Counter({
    name: 'lending_api_db_budget_exhausted_total',
    help: 'Requests whose database time ran past DATABASE_REQUEST_BUDGET_MS (or a write transaction past its own budget), answered 503 or 504',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(budgetsExhausted);
    },
  });

  // Callback style, as the other per-request hooks: the check is two comparisons on a success.
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (reply.statusCode >= 400 && typeof payload === 'string' && isProblem(reply.getHeader('content-type'))) {
      const code = problemCodeOf(payload);
      if (code) byCode.set(code, (byCode.get(code) ?? 0) + 1);
    }
    done(null, payload);
  });
  app.addHook('onError', (_request, _reply, error, done) => {
    if (ranOutOfBudget(error)) budgetsExhausted += 1;
    done();
  });
}

function isProblem(contentType: unknown): boolean {
  return typeof contentType === 'string' && contentType.startsWith(PROBLEM_CONTENT_TYPE);
}

/** The body's `code`, when it is one of the table's (the label's values stay bounded whatever a body says). */
function problemCodeOf(body: string): ErrorCode | undefined {
  try {
    const code = (JSON.parse(body) as { code?: unknown }).code;
    return typeof code === 'string' && Object.hasOwn(ERROR_CODES, code) ? (code as ErrorCode) : undefined;
  } catch {
    return undefined;
  }
}

function ranOutOfBudget(error: unknown): boolean {
  for (let cause = error, depth = 0; cause instanceof Error && depth < 8; cause = cause.cause, depth += 1) {
    if (cause instanceof DatabaseBudgetExceededError) return true;
  }
  return false;
}
