import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Socket } from 'node:net';
import { ApiError } from '../domain/errors.js';
import { problemDocument, PROBLEM_CONTENT_TYPE, sendProblem, toApiError } from './problem.js';

/** Fastify's own rejections (a malformed percent-encoding in the path) as problem+json too. */
export function frameworkErrorHandler(error: Error, request: FastifyRequest, reply: FastifyReply): void {
  // The request's hooks never ran: set what they would have.
  reply.header('x-request-id', request.id);
  reply.header('x-content-type-options', 'nosniff');
  void sendProblem(request, reply, toApiError(error));
}

/**
 * Requests Node cannot even parse (oversized headers, broken framing) never
 * reach Fastify: answer them on the socket, still as problem+json.
 */
export function clientErrorHandler(error: NodeJS.ErrnoException, socket: Socket): void {
  if (error.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  const detail = error.code === 'HPE_HEADER_OVERFLOW' ? 'the request headers are too large' : 'the request could not be parsed as HTTP';
  const body = JSON.stringify(problemDocument(new ApiError('bad_request', detail), 'none'));
  socket.end(
    `HTTP/1.1 400 Bad Request\r\nContent-Type: ${PROBLEM_CONTENT_TYPE}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}
