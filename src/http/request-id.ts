import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

// A client's id is echoed only when it is short and plain, so it cannot
// inject anything into headers or logs.
const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export function requestIdFor(request: IncomingMessage): string {
  const given = request.headers['x-request-id'];
  return typeof given === 'string' && SANE_REQUEST_ID.test(given) ? given : randomUUID();
}
