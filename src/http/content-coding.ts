import type { FastifyRequest } from 'fastify';
import { ApiError } from '../domain/errors.js';
import { truncate } from '../domain/truncate.js';

/**
 * A body is read as the bytes sent: this service decodes no content coding.
 * A body declared `gzip` (or anything but `identity`) is refused (415) before
 * it is read, rather than parsed as if it were plain JSON — a client whose
 * proxy compresses would otherwise have its write taken for something else,
 * or moved money on a body it never meant to be read that way.
 */
export function refuseContentCoding(request: FastifyRequest): void {
  const coding = request.headers['content-encoding'];
  // Only a route that reads its body cares (the others never look at it).
  if (coding === undefined || onlyIdentity(coding) || !request.routeOptions.config.readsBody) return;
  throw new ApiError(
    'unsupported_media_type',
    `send the body without a Content-Encoding (or as identity): this service does not decode '${truncate(coding)}'`,
  );
}

function onlyIdentity(coding: string): boolean {
  return coding.split(',').every((token) => token.trim().toLowerCase() === 'identity');
}
