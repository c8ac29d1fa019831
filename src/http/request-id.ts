import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { KEY_ID_AND_SECRET } from '../auth/api-key-format.js';
import { SANE_REQUEST_ID } from '../domain/request-id-format.js';

// A client's id is echoed only when it is sane (SANE_REQUEST_ID), and not when it looks like an API key (`lak_…`, or its id and secret without
// the prefix): a client that put its key in the wrong header would find it
// echoed back and logged in clear.
const KEY_PREFIX = /lak_/i;

export function requestIdFor(request: IncomingMessage): string {
  const given = request.headers['x-request-id'];
  return typeof given === 'string' && SANE_REQUEST_ID.test(given) && !KEY_PREFIX.test(given) && !KEY_ID_AND_SECRET.test(given) ? given : randomUUID();
}
