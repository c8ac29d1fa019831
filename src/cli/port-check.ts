import net from 'node:net';

/** The address `serve` or `demo --serve` was asked to listen on cannot be had; nothing was changed. */
export class PortUnavailableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PortUnavailableError';
  }
}

/**
 * Binds `host:port` for a moment and lets it go, so a command that would
 * listen there learns before it opens the store — and so before it changes
 * anything — that it cannot. Port 0 (any free port) always can.
 */
export async function assertPortFree(host: string, port: number): Promise<void> {
  if (port === 0) return;
  await new Promise<void>((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', (error) => reject(listenErrorMessage(error, host, port)));
    probe.listen({ host, port }, () => probe.close(() => resolve()));
  });
}

/**
 * The error listening on `host:port` failed with, in words a person can act on:
 * which address, why, and how to choose another. Any other error (one not
 * about that address) is returned unchanged.
 */
export function listenErrorMessage(error: unknown, host: string, port: number): unknown {
  const { code, port: failedPort } = error as { code?: unknown; port?: unknown };
  if (failedPort !== undefined && failedPort !== port) return error;
  const other = port === 65535 ? 3001 : port + 1;
  const anotherPort = `choose another port with --port ${other} or PORT=${other}`;
  const unavailable = (why: string, remedy: string) => new PortUnavailableError(`cannot listen on ${host}:${port}: ${why}. Nothing was changed: ${remedy}`);
  switch (code) {
    case 'EADDRINUSE':
      return unavailable(`port ${port} is already in use (by another lending-api, or any other server)`, `stop that process, or ${anotherPort}`);
    case 'EACCES':
      return unavailable(`this user may not listen on port ${port} (ports below 1024 need privileges)`, anotherPort);
    case 'EADDRNOTAVAIL':
      return unavailable(`${host} is not an address of this machine`, 'choose another address with --host or HOST= (127.0.0.1, 0.0.0.0, …)');
    default:
      return error;
  }
}
