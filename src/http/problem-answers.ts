import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { OutageLog, OverloadLog } from './outage-log.js';
import { sendProblem, toApiError } from './problem.js';
import { notFound } from './request-hooks.js';

export interface ProblemAnswersOptions {
  /** During a database outage, how often a summary line counts the 503s (default 5 s). */
  outageSummaryMs?: number | undefined;
}

/**
 * Every failure answered as problem+json, and logged by what it is: an outage and an overload each as a
 * line with a count per window (they come by the thousand), a bug (any other 5xx) with its cause.
 */
export const problemAnswers = fp(async (app: FastifyInstance, options: ProblemAnswersOptions) => {
  const outageLog = new OutageLog(app.log, options.outageSummaryMs);
  const overloadLog = new OverloadLog(app.log);
  app.addHook('onClose', async () => {
    outageLog.close();
    overloadLog.close();
  });
  app.setErrorHandler(async (error, request, reply) => {
    const apiError = toApiError(error);
    if (apiError.code === 'service_unavailable') outageLog.failure(error, request.id);
    else if (apiError.code === 'overloaded') overloadLog.refused(request);
    else if (apiError.status >= 500) request.log.error({ err: error }, apiError.message);
    return sendProblem(request, reply, apiError);
  });
  app.setNotFoundHandler(async (request, reply) => sendProblem(request, reply, notFound(request)));
});
