import type { FastifyReply, FastifyRequest } from 'fastify';

/**
 * For answers given before the request body was read (405, 404): the body
 * may still be arriving, one byte a second, so the connection is closed
 * after the answer instead of Node draining the body to reuse it.
 */
export function closeIfBodyPending(request: FastifyRequest, reply: FastifyReply): void {
  const { headers } = request.raw;
  const hasBody = headers['transfer-encoding'] !== undefined || (headers['content-length'] !== undefined && headers['content-length'] !== '0');
  if (hasBody && !request.raw.complete) reply.header('connection', 'close');
}
