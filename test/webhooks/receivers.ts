import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import https from 'node:https';
import net, { type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';

export interface ReceivedRequest {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingMessage['headers'];
  readonly body: string;
}

export interface Receiver {
  readonly port: number;
  /** Requests whose body was read in full, and raw connections accepted. */
  readonly requests: ReceivedRequest[];
  connections: number;
  /** Connections not yet closed (by either side). */
  openSockets(): number;
  close(): Promise<void>;
}

type Handler = (request: ReceivedRequest, response: ServerResponse) => void;

function track(server: net.Server, receiver: { connections: number }): Pick<Receiver, 'close' | 'openSockets'> {
  const sockets = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    receiver.connections += 1;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  return {
    openSockets: () => sockets.size,
    close: () =>
      new Promise((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

async function listen(server: net.Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

function serve(server: http.Server, handler: Handler): Promise<Receiver> {
  const receiver = { requests: [] as ReceivedRequest[], connections: 0 };
  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const received = { method: request.method ?? '', url: request.url ?? '', headers: request.headers, body: Buffer.concat(chunks).toString('utf8') };
      receiver.requests.push(received);
      handler(received, response);
    });
  });
  const tracked = track(server, receiver);
  return listen(server).then((port) => Object.assign(receiver, { port }, tracked));
}

/**
 * An HTTP server on 127.0.0.1 that reads each request's body, records it, then lets `handler` answer;
 * it closes a connection idle for `keepAliveMs` (Node's default: 5 s).
 */
export function startHttpReceiver(handler: Handler, keepAliveMs?: number): Promise<Receiver> {
  const server = http.createServer();
  if (keepAliveMs !== undefined) server.keepAliveTimeout = keepAliveMs;
  return serve(server, handler);
}

/** An HTTPS receiver with a certificate for `localhost` and 127.0.0.1, self-signed by openssl; `ca` is that certificate. */
export async function startHttpsReceiver(handler: Handler): Promise<Receiver & { readonly ca: string }> {
  const dir = mkdtempSync(path.join(tmpdir(), 'webhook-tls-'));
  try {
    const [key, cert] = [path.join(dir, 'key.pem'), path.join(dir, 'cert.pem')];
    execFileSync('openssl', [
      'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '2',
      '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1', '-keyout', key, '-out', cert,
    ], { stdio: 'ignore' });
    const ca = readFileSync(cert, 'utf8');
    const receiver = await serve(https.createServer({ key: readFileSync(key), cert: ca }), handler);
    return Object.assign(receiver, { ca });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A TCP server that accepts connections, reads and drops what arrives, and never writes a byte nor closes. */
export async function startBlackHole(): Promise<Receiver> {
  // Reading is what lets it notice the other side hang up.
  const server = net.createServer((socket) => socket.resume());
  const receiver = { requests: [] as ReceivedRequest[], connections: 0 };
  const tracked = track(server, receiver);
  const port = await listen(server);
  return Object.assign(receiver, { port }, tracked);
}

/** A port on 127.0.0.1 that nothing listens on (it was free a moment ago). */
export async function closedPort(): Promise<number> {
  const server = net.createServer();
  const port = await listen(server);
  await new Promise((resolve) => server.close(resolve));
  return port;
}
