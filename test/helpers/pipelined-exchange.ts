import { connect } from 'node:net';
import { parseRawResponse, type RawResponse } from './raw-http.js';

/**
 * Sends `bytes` at once on one connection (requests pipelined), then
 * half-closes it when `halfClose` says so, and resolves with everything the
 * server sent until it closed the connection.
 */
export function exchangeUntilClosed(port: number, bytes: string | Buffer, halfClose = false): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let text = '';
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`the server did not close the connection; got ${JSON.stringify(text.slice(0, 400))}`));
    }, 60_000);
    socket.on('data', (chunk) => (text += chunk.toString('latin1')));
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(text);
    });
    socket.on('error', () => {});
    if (halfClose) socket.end(bytes);
    else socket.write(bytes);
  });
}

/** The responses in `text`, in order (none answers a HEAD: every body has its Content-Length). */
export function responsesIn(text: string): RawResponse[] {
  const responses: RawResponse[] = [];
  let rest = text;
  while (rest.length > 0) {
    const headEnd = rest.indexOf('\r\n\r\n');
    if (headEnd === -1) throw new Error(`an incomplete response: ${JSON.stringify(rest.slice(0, 200))}`);
    const response = parseRawResponse(rest);
    responses.push(response);
    rest = rest.slice(headEnd + 4 + Number(response.headers['content-length'] ?? 0));
  }
  return responses;
}

/** An HTTP/1.1 request as bytes; `Content-Length` is added for a body unless the headers frame it already. */
export function rawRequestText(requestLine: string, headers: readonly (readonly [string, string])[], body = ''): string {
  const framed = headers.some(([name]) => /^(content-length|transfer-encoding)$/i.test(name));
  const all = body === '' || framed ? headers : [...headers, ['Content-Length', String(Buffer.byteLength(body))] as const];
  return `${requestLine}\r\n${all.map(([name, value]) => `${name}: ${value}\r\n`).join('')}\r\n${body}`;
}
