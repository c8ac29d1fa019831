import type { FastifyRequest } from 'fastify';
import { ApiError } from '../domain/errors.js';
import { truncate } from '../domain/truncate.js';
import { MAX_UID_LENGTH } from '../domain/record-uid.js';

export { MAX_UID_LENGTH };

/**
 * The router's bound on a path parameter, as sent: room for a uid of
 * MAX_UID_LENGTH characters each percent-encoded from up to 4 UTF-8 bytes
 * (`%XX` × 4), so every uid that can exist is routed. A longer parameter
 * names no record and is answered 404 (see frameworkErrorHandler).
 */
export const MAX_ENCODED_PARAM_LENGTH = MAX_UID_LENGTH * 4 * 3;

/**
 * A uid longer than any record's is an unknown record: 404 like any other,
 * before anything is looked up, and without echoing the whole of it.
 */
export function refuseImpossibleUids(request: FastifyRequest): void {
  const params = request.params as Record<string, string | undefined>;
  for (const name in params) {
    const value = params[name];
    // Characters, as the tables count them: a code point outside the BMP is two UTF-16 units.
    if (value !== undefined && value.length > MAX_UID_LENGTH && [...value].length > MAX_UID_LENGTH) throw uidTooLong(value);
  }
}

export function uidTooLong(uid: string): ApiError {
  return new ApiError('not_found', `no record has a uid over ${MAX_UID_LENGTH} characters, as '${truncate(uid)}' is`);
}

/** The same 404 when the router refused the parameter (over MAX_ENCODED_PARAM_LENGTH) and only the path is known. */
export function pathUidTooLong(path: string): ApiError {
  return new ApiError('not_found', `no record has a uid over ${MAX_UID_LENGTH} characters, as the one in '${truncate(path, 60)}' is`);
}
