import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { holdsCredential } from '../domain/credential-in-text.js';
import { SANE_REQUEST_ID } from '../domain/request-id-format.js';
import { presentedCredentialOf } from './presented-credential.js';

// A client's id is echoed only when it is sane (SANE_REQUEST_ID), and not when it holds a credential (holdsCredential: key-shaped,
// or the request's own key in any form): a client that put its key in the wrong header would find it echoed back, logged in
// clear and quoted in the events its request caused.

export function requestIdFor(request: IncomingMessage): string {
  const given = request.headers['x-request-id'];
  return typeof given === 'string' && SANE_REQUEST_ID.test(given) && !holdsCredential(given, presentedCredentialOf(request.headers.authorization)) ? given : randomUUID();
}
