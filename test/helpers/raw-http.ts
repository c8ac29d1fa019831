import { connect } from 'node:net';

export interface RawResponse {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: string;
  /** The whole text the server sent before closing (or before the wait ended). */
  readonly raw: string;
}

/** Parses the first HTTP/1.1 response in `text` (no chunked bodies: the service always sends a length). */
export function parseRawResponse(text: string): RawResponse {
  const end = text.indexOf('\r\n\r\n');
  const [statusLine = '', ...lines] = text.slice(0, end === -1 ? text.length : end).split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const length = Number(headers['content-length'] ?? 0);
  const body = end === -1 ? '' : text.slice(end + 4, end + 4 + length);
  return { status: Number(statusLine.split(' ')[1]), headers, body, raw: text };
}

/**
 * Sends `request` exactly as given (malformed requests included) and
 * resolves with the first response, once it is complete or the server closed
 * the connection; rejects after `withinMs`.
 */
export function rawRequest(port: number, request: string | Buffer, withinMs = 10_000): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let text = '';
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no complete answer within ${withinMs} ms; got ${JSON.stringify(text.slice(0, 200))}`));
    }, withinMs);
    const finish = () => {
      clearTimeout(timer);
      socket.destroy();
      resolve(parseRawResponse(text));
    };
    socket.on('data', (chunk) => {
      text += chunk.toString('latin1');
      const end = text.indexOf('\r\n\r\n');
      if (end !== -1) {
        const length = Number(/\r\ncontent-length:\s*(\d+)/i.exec(text.slice(0, end))?.[1] ?? 0);
        if (text.length >= end + 4 + length) finish();
      }
    });
    socket.on('close', finish);
    socket.on('error', () => {});
    socket.write(request);
  });
}
