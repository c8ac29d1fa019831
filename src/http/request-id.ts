import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { looksLikeApiKey } from '../domain/key-shaped-text.js';
import { SANE_REQUEST_ID } from '../domain/request-id-format.js';

// A client's id is echoed only when it is sane (SANE_REQUEST_ID), and not when it looks like an API key (`lak_…`, or its id and secret without
// the prefix): a client that put its key in the wrong header would find it
// echoed back and logged in clear.

export function requestIdFor(request: IncomingMessage): string {
  const given = request.headers['x-request-id'];
  return typeof given === 'string' && SANE_REQUEST_ID.test(given) && !looksLikeApiKey(given) ? given : randomUUID();
}
