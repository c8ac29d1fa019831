import type { FastifyRequest } from 'fastify';
import { ApiError } from '../domain/errors.js';
import { truncate } from '../domain/truncate.js';

/**
 * A body is read as the bytes sent: this service decodes no coding. A body
 * declared `gzip` (or anything but `identity`) is refused (415) before it is
 * read, rather than parsed as if it were plain JSON — a client whose proxy
 * compresses would otherwise have its write taken for something else, or
 * moved money on a body it never meant to be read that way. The same holds
 * for a transfer coding: `chunked` alone is framing, and Node takes the
 * chunks apart; any other (`gzip, chunked`) would be left on the bytes read.
 */
export function refuseContentCoding(request: FastifyRequest): void {
  const coding = request.headers['content-encoding'];
  const transfer = request.headers['transfer-encoding'];
  const codedBody = coding !== undefined && !onlyIdentity(coding);
  const codedTransfer = transfer !== undefined && transfer.trim().toLowerCase() !== 'chunked';
  // Only a route that reads its body cares (the others never look at it); routeOptions is read last, it costs an object.
  if ((!codedBody && !codedTransfer) || !request.routeOptions.config.readsBody) return;
  if (codedBody) {
    throw new ApiError(
      'unsupported_media_type',
      `send the body without a Content-Encoding (or as identity): this service does not decode '${truncate(coding)}'`,
    );
  }
  throw new ApiError(
    'unsupported_media_type',
    `send the body with a Content-Length, or with Transfer-Encoding: chunked alone: this service decodes no transfer coding but chunked, not '${truncate(transfer ?? '')}'`,
  );
}

function onlyIdentity(coding: string): boolean {
  return coding.split(',').every((token) => token.trim().toLowerCase() === 'identity');
}
