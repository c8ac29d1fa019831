import { randomUUID } from 'node:crypto';
import { STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../domain/errors.js';
import { problemDocument, PROBLEM_CONTENT_TYPE, sendProblem, toApiError } from './problem.js';
import { pathUidTooLong } from './record-uid-length.js';
import { JSON_SECURITY_HEADERS } from './security-headers.js';

/**
 * Fastify's own rejections as problem+json too: a malformed percent-encoding
 * in the path (400), and a path parameter longer than the router takes —
 * longer than any uid can be, so no record has it (404, like any unknown one).
 */
export function frameworkErrorHandler(error: Error, request: FastifyRequest, reply: FastifyReply): void {
  // The request's hooks never ran: set what they would have.
  reply.header('x-request-id', request.id);
  reply.headers(JSON_SECURITY_HEADERS);
  const tooLong = (error as { code?: string }).code === 'FST_ERR_MAX_PARAM_LENGTH';
  void sendProblem(request, reply, tooLong ? pathUidTooLong(request.url.split('?')[0] ?? '') : toApiError(error));
}

/** What Node's parser (or its request timers) rejected, as the problem the client gets. */
function parseRejection(error: NodeJS.ErrnoException): ApiError {
  switch (error.code) {
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new ApiError('request_timeout', 'the request (headers and body) did not arrive within the time allowed; send it again');
    case 'HPE_HEADER_OVERFLOW':
      return new ApiError('bad_request', 'the request line or headers are too large');
    case 'HPE_INVALID_METHOD':
      return new ApiError('bad_request', 'the request method is not an HTTP method this server knows');
    default:
      return new ApiError('bad_request', 'the request could not be parsed as HTTP');
  }
}

/**
 * Requests Node cannot even parse (oversized headers, unknown methods, broken
 * framing) or that did not arrive in time never reach Fastify: answer them on
 * the socket, as problem+json with a request id (also logged) and the same
 * security headers as every other answer, then close the connection.
 *
 * Bad bytes after complete requests on the same connection (a stray space, a
 * malformed pipelined request) do not cut those requests short: each already
 * being handled gets its own answer first — a write may have been recorded,
 * and a client that saw only the 400 would retry it as if nothing ran.
 */
export function clientErrorHandler(this: FastifyInstance, error: NodeJS.ErrnoException, socket: Socket): void {
  if (error.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  // Node reports the parser's error again for every later chunk: the connection is answered once.
  if (rejectedSockets.has(socket)) return;
  rejectedSockets.add(socket);
  // The bad bytes are the framing of a request already answered (e.g. its Transfer-Encoding, after a 400 for
  // its headers): it has its one answer; a second would be read as the answer to a request never sent.
  const last = lastResponses.get(socket);
  if (last && !last.req.complete && last.writableFinished) {
    socket.destroy();
    return;
  }
  // A HEAD answer has no body, even when it is a rejection.
  const isHead = (error as { rawPacket?: Buffer }).rawPacket?.subarray(0, 5).toString('latin1') === 'HEAD ';
  const answer = () => {
    if (socket.writable) answerOnSocket(this, socket, parseRejection(error), error.code ?? error.name, { isHead });
  };
  afterAnswersInFlight(socket, answer);
}

const rejectedSockets = new WeakSet<Socket>();
/** Each connection's latest request's response (see clientErrorHandler). */
const lastResponses = new WeakMap<Socket, ServerResponse>();

/** Remembers each connection's latest response, for clientErrorHandler to tell a request's own bad framing from bytes after it. */
export function rememberLastResponses(app: FastifyInstance): void {
  app.server.on('request', (request: IncomingMessage, response: ServerResponse) => lastResponses.set(request.socket, response));
}

/**
 * Runs `then` once every response Node has queued on the socket is sent.
 * Node builds a request's response as soon as the request is parsed and
 * sends pipelined ones in order (the next is attached to the socket when the
 * one before finishes), so this waits for each in turn. A response whose
 * request has not fully arrived is not waited for: the bad bytes are that
 * request's own, and its handler cannot have run with a body it never got.
 */
function afterAnswersInFlight(socket: Socket, then: () => void): void {
  const inFlight = (socket as Socket & { _httpMessage?: (ServerResponse & { _last?: boolean }) | null })._httpMessage;
  if (!inFlight || inFlight.writableFinished || !inFlight.req.complete) {
    then();
    return;
  }
  const next = () => {
    inFlight.off('close', gone);
    // Node's own 'finish' listener (added first) has attached the next pipelined response by now.
    afterAnswersInFlight(socket, then);
  };
  // A response Node has marked the last (the client half-closed the connection after the bad bytes):
  // Node's own 'finish' listener closes the connection, so the answer goes before it runs.
  const beforeClosing = () => {
    if (inFlight._last !== true) return;
    inFlight.off('finish', next);
    inFlight.off('close', gone);
    then();
  };
  const gone = () => {
    inFlight.off('finish', next);
    inFlight.off('finish', beforeClosing);
    // The connection went away before the answer was sent: there is no one left to answer.
    if (!inFlight.writableFinished) socket.destroy();
  };
  inFlight.once('finish', next);
  inFlight.prependOnceListener('finish', beforeClosing);
  inFlight.once('close', gone);
}

/**
 * Requests Node answers itself unless the server listens for them: a
 * CONNECT (Node would drop the connection without a word) and an `Expect`
 * other than `100-continue` (Node's bare 417). Both get problem+json, a
 * request id and the security headers, like every other answer.
 */
export function answerNodeOwnedRequests(app: FastifyInstance): void {
  app.server.on('connect', (request: IncomingMessage, socket: Socket) => {
    const problem = new ApiError('method_not_allowed', 'CONNECT is not served: this service is not a proxy');
    // Pipelined after other requests, it is answered after them (their answers are still being sent on this socket).
    afterAnswersInFlight(socket, () => {
      if (socket.writable) answerOnSocket(app, socket, problem, 'CONNECT', { headers: { allow: 'GET, HEAD' } });
    });
    request.resume();
  });
  app.server.on('checkExpectation', (request: IncomingMessage, response: ServerResponse) => {
    const problem = new ApiError('expectation_failed', `the only expectation this service meets is 100-continue, not '${String(request.headers.expect)}'`);
    const answer = problemAnswer(app, problem, 'EXPECTATION');
    response.writeHead(problem.status, answer.headers).end(request.method === 'HEAD' ? undefined : answer.body);
  });
}

/** A problem answered outside Fastify: logged with a fresh request id, with the headers every answer carries. */
function problemAnswer(app: FastifyInstance, problem: ApiError, reason: string, extraHeaders: Record<string, string> = {}): { headers: Record<string, string>; body: string } {
  const requestId = randomUUID();
  app.log.info({ request_id: requestId, status: problem.status, parse_error: reason }, 'request rejected while parsing');
  const body = JSON.stringify(problemDocument(problem, requestId));
  const headers = {
    'content-type': PROBLEM_CONTENT_TYPE,
    'content-length': String(Buffer.byteLength(body)),
    'x-request-id': requestId,
    ...JSON_SECURITY_HEADERS,
    ...extraHeaders,
    connection: 'close',
  };
  return { headers, body };
}

function answerOnSocket(
  app: FastifyInstance,
  socket: Socket,
  problem: ApiError,
  reason: string,
  options: { isHead?: boolean; headers?: Record<string, string> } = {},
): void {
  const { headers, body } = problemAnswer(app, problem, reason, options.headers);
  const head = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`).join('');
  socket.end(`HTTP/1.1 ${problem.status} ${STATUS_CODES[problem.status] ?? ''}\r\n${head}\r\n${options.isHead ? '' : body}`);
}
