import { LogController, type FastifyReply, type FastifyRequest } from 'fastify';
import { scrubSecrets } from '../logger.js';

/**
 * One JSON line per request, written when the response is done: request id,
 * organization, route pattern, status and duration. Query strings and headers
 * are never logged (they may carry credentials or anything a client typed).
 */
export class AccessLogController extends LogController {
  constructor() {
    super({ requestIdLogLabel: 'request_id' });
  }

  override incomingRequest(): void {}

  override routeNotFound(): void {}

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    const line = {
      org: request.auth?.orgUid ?? null,
      method: request.method,
      route: request.routeOptions.url ?? null,
      // A client may paste anything into a path, a key included.
      path: scrubSecrets((request.raw.url ?? '').split('?')[0] ?? '').slice(0, 200),
      status: reply.statusCode,
      duration_ms: Math.round(reply.elapsedTime * 1000) / 1000,
      ...(error ? { err: error } : {}),
    };
    if (error || reply.statusCode >= 500) reply.log.error(line, 'request');
    else reply.log.info(line, 'request');
  }
}
