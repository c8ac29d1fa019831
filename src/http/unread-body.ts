import type { FastifyReply, FastifyRequest } from 'fastify';

/** Whether the request has a body that has not all arrived yet. */
export function bodyPending(request: FastifyRequest): boolean {
  const { headers } = request.raw;
  const hasBody = headers['transfer-encoding'] !== undefined || (headers['content-length'] !== undefined && headers['content-length'] !== '0');
  return hasBody && !request.raw.complete;
}

/**
 * For answers given before the request body was read (405, 404): the body
 * may still be arriving, one byte a second, so the connection is closed
 * after the answer instead of Node draining the body to reuse it.
 */
export function closeIfBodyPending(request: FastifyRequest, reply: FastifyReply): void {
  if (bodyPending(request)) reply.header('connection', 'close');
}
