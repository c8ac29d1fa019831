import { LogController, type FastifyBaseLogger, type FastifyReply, type FastifyRequest } from 'fastify';
import { scrubPath } from '../logger.js';
import { answeredOverloaded } from './outage-log.js';

/**
 * One JSON line per request, written when the response is done: request id,
 * organization, route pattern, status and duration. Query strings and headers
 * are never logged (they may carry credentials or anything a client typed).
 */
export class AccessLogController extends LogController {
  // Redaction walks every logged object against every redact path (about
  // 10 µs a line, measured: a sixth of a request's CPU at LOG_LEVEL=info).
  // A successful request's line holds only the fields set below, none of
  // them secret (the path is scrubbed), so it is written by a child that
  // skips redaction; a line with an error goes through the redacting logger.
  private plainLog: FastifyBaseLogger | undefined;

  constructor() {
    super({ requestIdLogLabel: 'request_id' });
  }

  override incomingRequest(): void {}

  override routeNotFound(): void {}

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    // Overload refused as designed is counted by OverloadLog, not logged as an error per request.
    const failed = Boolean(error) || (reply.statusCode >= 500 && !answeredOverloaded(request));
    this.plainLog ??= request.server.log.child({}, { redact: [] });
    // Above LOG_LEVEL=info a successful request's line would be dropped: not built either (a few µs a request).
    if (!failed && !logsInfo(this.plainLog)) return;
    const line = {
      org: request.auth?.orgUid ?? null,
      method: request.method,
      route: request.routeOptions.url ?? null,
      // A client may paste anything into a path, a key included, even percent-encoded.
      path: scrubPath((request.raw.url ?? '').split('?')[0] ?? '').slice(0, 200),
      status: reply.statusCode,
      duration_ms: Math.round(reply.elapsedTime * 1000) / 1000,
    };
    if (failed) {
      // The request's own logger carries the request id.
      reply.log.error(error ? { ...line, err: error } : line, 'request');
      return;
    }
    this.plainLog.info({ request_id: request.id, ...line }, 'request');
  }
}

function logsInfo(log: FastifyBaseLogger): boolean {
  const { isLevelEnabled } = log as { isLevelEnabled?: (level: string) => boolean };
  return isLevelEnabled ? isLevelEnabled.call(log, 'info') : true;
}
